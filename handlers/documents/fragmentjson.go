package documents

import (
	"slices"
	"strconv"

	"github.com/agent-gateway/agent-gateway/handlers/jsonwire"
)

// AppendJSON appends f exactly as toolset.EncodeJSON (encoding/json, no
// HTML escaping) writes it, without reflection; the toolset's result
// encoder takes it from here (toolset.JSONAppender). encoding/json's
// string escaping, a call per multi-byte character and a buffer grown as
// it goes, was the largest share of encoding a 64 KiB fragment.
// TestFragmentJSONMatchesEncodingJSON and FuzzFragmentJSON hold the two
// byte for byte; a member added to Fragment must be added here too, and
// the differential test fails until it is.
func (f Fragment) AppendJSON(dst []byte) []byte {
	// Room for the text, its escapes and the other members up front (see
	// toolset's writeOwned).
	dst = slices.Grow(dst, len(f.Content)+len(f.Content)/8+512)
	dst = append(dst, `{"content":`...)
	dst = jsonwire.AppendStringKeepHTML(dst, f.Content)
	dst = append(dst, `,"start_byte":`...)
	dst = strconv.AppendInt(dst, f.StartByte, 10)
	dst = append(dst, `,"end_byte":`...)
	dst = strconv.AppendInt(dst, f.EndByte, 10)
	dst = append(dst, `,"file_bytes":`...)
	dst = strconv.AppendInt(dst, f.FileBytes, 10)
	dst = append(dst, `,"file_sha256":`...)
	dst = jsonwire.AppendStringKeepHTML(dst, f.FileSHA256)
	dst = append(dst, `,"fragment_sha256":`...)
	dst = jsonwire.AppendStringKeepHTML(dst, f.FragmentSHA256)
	dst = append(dst, `,"commit_sha":`...)
	dst = jsonwire.AppendStringKeepHTML(dst, f.CommitSHA)
	dst = append(dst, `,"path":`...)
	dst = jsonwire.AppendStringKeepHTML(dst, f.Path)
	if f.NextCursor != "" {
		dst = append(dst, `,"next_cursor":`...)
		dst = jsonwire.AppendStringKeepHTML(dst, f.NextCursor)
	}
	return append(dst, '}')
}
