package documents

import (
	"slices"
	"strconv"

	"github.com/agent-gateway/agent-gateway/handlers/jsonwire"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
)

// A fragment writes its own text block on the owned tools/call path.
var _ toolset.JSONStringAppender = Fragment{}

// AppendJSON appends f exactly as toolset.EncodeJSON (encoding/json, no
// HTML escaping) writes it, without reflection; the toolset's result
// encoder takes it from here (toolset.JSONAppender). encoding/json's
// string escaping, a call per multi-byte character and a buffer grown as
// it goes, was the largest share of encoding a 64 KiB fragment.
// TestFragmentJSONMatchesEncodingJSON and FuzzFragmentJSON hold the two
// byte for byte; a member added to Fragment must be added here too, and
// the differential test fails until it is.
func (f Fragment) AppendJSON(dst []byte) []byte { return f.appendTo(dst, &fragmentJSON) }

// AppendJSONString appends f's JSON (AppendJSON) as a JSON string, as
// the owned tools/call path writes a result's text into its answer:
// exactly jsonwire.AppendString(dst, string(f.AppendJSON(nil))), in one
// pass over the text and without building f's JSON first
// (toolset.JSONStringAppender). TestFragmentJSONMatchesEncodingJSON and
// FuzzFragmentJSON hold it to that composition.
func (f Fragment) AppendJSONString(dst []byte) []byte { return f.appendTo(dst, &fragmentJSONString) }

// fragmentSyntax is what a fragment's encoding writes around and between
// its values, and how it writes a string value: in its JSON, or in the
// JSON string of its JSON. The member names and the numbers' digits hold
// nothing a JSON string escapes, so only the quotes around the names gain
// a backslash there: the two differ in their literals and string writer
// alone.
type fragmentSyntax struct {
	// What stands before each member's value, and after the last.
	content, startByte, endByte, fileBytes, fileSHA256 string
	fragmentSHA256, commitSHA, path, nextCursor, end   string
	// appendString writes a string member's value.
	appendString func(dst []byte, s string) []byte
}

var fragmentJSON = fragmentSyntax{
	content: `{"content":`, startByte: `,"start_byte":`, endByte: `,"end_byte":`, fileBytes: `,"file_bytes":`,
	fileSHA256: `,"file_sha256":`, fragmentSHA256: `,"fragment_sha256":`, commitSHA: `,"commit_sha":`,
	path: `,"path":`, nextCursor: `,"next_cursor":`, end: `}`,
	appendString: jsonwire.AppendStringKeepHTML,
}

var fragmentJSONString = fragmentSyntax{
	content: `"{\"content\":`, startByte: `,\"start_byte\":`, endByte: `,\"end_byte\":`, fileBytes: `,\"file_bytes\":`,
	fileSHA256: `,\"file_sha256\":`, fragmentSHA256: `,\"fragment_sha256\":`, commitSHA: `,\"commit_sha\":`,
	path: `,\"path\":`, nextCursor: `,\"next_cursor\":`, end: `}"`,
	appendString: jsonwire.AppendStringInString,
}

// appendTo writes f's members in Fragment's order with syntax's literals
// and string writer.
func (f Fragment) appendTo(dst []byte, syntax *fragmentSyntax) []byte {
	// Room for the text, its escapes and the other members up front (see
	// toolset's writeOwned).
	dst = slices.Grow(dst, len(f.Content)+len(f.Content)/8+512)
	dst = append(dst, syntax.content...)
	dst = syntax.appendString(dst, f.Content)
	dst = append(dst, syntax.startByte...)
	dst = strconv.AppendInt(dst, f.StartByte, 10)
	dst = append(dst, syntax.endByte...)
	dst = strconv.AppendInt(dst, f.EndByte, 10)
	dst = append(dst, syntax.fileBytes...)
	dst = strconv.AppendInt(dst, f.FileBytes, 10)
	dst = append(dst, syntax.fileSHA256...)
	dst = syntax.appendString(dst, f.FileSHA256)
	dst = append(dst, syntax.fragmentSHA256...)
	dst = syntax.appendString(dst, f.FragmentSHA256)
	dst = append(dst, syntax.commitSHA...)
	dst = syntax.appendString(dst, f.CommitSHA)
	dst = append(dst, syntax.path...)
	dst = syntax.appendString(dst, f.Path)
	if f.NextCursor != "" {
		dst = append(dst, syntax.nextCursor...)
		dst = syntax.appendString(dst, f.NextCursor)
	}
	return append(dst, syntax.end...)
}
