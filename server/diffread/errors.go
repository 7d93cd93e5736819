package diffread

import "fmt"

// Check names one verification a page or the whole diff must pass.
type Check string

// The checks, in the order a page is checked. The last two are of the
// whole diff, made once the last page arrived.
const (
	CheckPage              Check = "page"                // the result is one well-formed page
	CheckRequested         Check = "requested"           // the page is of the pull request asked for
	CheckManifest          Check = "manifest"            // same diff identity as the first page's manifest
	CheckContract          Check = "contract"            // observed_input_range, whole_diff_verified, base64
	CheckByteOffset        Check = "byte_offset"         // the page starts where the previous one ended
	CheckData              Check = "data"                // data is canonical standard base64
	CheckChunkBytes        Check = "chunk_bytes"         // the decoded data has chunk_bytes bytes
	CheckChunkSHA256       Check = "chunk_sha256"        // the decoded data hashes to chunk_sha256
	CheckText              Check = "text"                // text is the bytes when they are UTF-8, else null
	CheckNextByteOffset    Check = "next_byte_offset"    // byte_offset + chunk_bytes
	CheckEOF               Check = "eof"                 // eof exactly when the page reaches byte_count
	CheckNextCursor        Check = "next_cursor"         // a cursor exactly when not at eof
	CheckByteCount         Check = "byte_count"          // the assembled diff has manifest.content.byte_count bytes
	CheckSHA256            Check = "sha256"              // the assembled diff hashes to manifest.content.sha256
	CheckWholeDiffVerified Check = "whole_diff_verified" // the gateway verified the whole diff for the page
)

// VerificationError says exactly what failed: on which page (1-based), at
// which byte offset of the diff (the bytes assembled before that page),
// which check, what was expected and what came. Nothing of a page that
// failed was written.
type VerificationError struct {
	Page     int
	Offset   int64
	Check    Check
	Expected string
	Got      string
}

// Error renders the failure for a person.
func (e *VerificationError) Error() string {
	return fmt.Sprintf("verification failed: page %d at byte %d: %s: expected %s, got %s",
		e.Page, e.Offset, e.Check, e.Expected, e.Got)
}

// StaleError is cursor_stale: the pull request's diff changed between two
// pages (a push, a new merge base). Nothing can be spliced; the reader must
// start again from the first page.
type StaleError struct {
	Page   int
	Offset int64
}

// Error renders the failure for a person.
func (e *StaleError) Error() string {
	return fmt.Sprintf("the pull request moved; start again (cursor_stale on page %d at byte %d)", e.Page, e.Offset)
}

// ToolError is an error result of the tool other than cursor_stale, with
// its stable code (docs/tools.md): not_found, forbidden,
// evidence_malformed, rate_limited, …
type ToolError struct {
	Page    int
	Offset  int64
	Code    string
	Message string
}

// Error renders the failure for a person; code and message are clipped,
// as they come from the endpoint.
func (e *ToolError) Error() string {
	return fmt.Sprintf("%s refused page %d at byte %d: %s: %s", ToolName, e.Page, e.Offset, clip(e.Code), clip(e.Message))
}

// CallError is a failed MCP call: the endpoint could not be reached,
// answered an HTTP error or something that is not MCP, redirected, or sent
// a response over MaxResponseBytes.
type CallError struct {
	Page   int // 0: connecting, before the first page
	Offset int64
	Err    error
}

// Error renders the failure for a person.
func (e *CallError) Error() string {
	if e.Page == 0 {
		return fmt.Sprintf("connect: %v", e.Err)
	}
	return fmt.Sprintf("page %d at byte %d: %v", e.Page, e.Offset, e.Err)
}

// Unwrap returns the underlying error.
func (e *CallError) Unwrap() error { return e.Err }
