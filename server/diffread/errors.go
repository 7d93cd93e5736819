package diffread

import "fmt"

// Check names one verification a page or the whole diff must pass.
type Check string

// The checks, in the order a page is checked. The last two are of the
// whole diff, made once the last page arrived.
const (
	CheckRequested         Check = "requested"           // the page is of the pull request asked for
	CheckManifest          Check = "manifest"            // same diff identity as the first page's manifest
	CheckContract          Check = "contract"            // observed_input_range, whole_diff_verified, base64
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

// Bound names one of the reader's bounds on what it reads: an answer
// outside them is refused before anything of it is trusted or written.
type Bound string

// The bounds.
const (
	// BoundStrict: the answer is one text block holding one page exactly
	// as DecodePage (and, for the manifest, Verifier.Add) demands.
	BoundStrict Bound = "strict"
	// BoundEnvelope: no HTTP response is over MaxResponseBytes, the
	// 49,000-byte envelope every page of the gateway fits in.
	BoundEnvelope Bound = "envelope"
	// BoundProgress: a page starts at the byte asked for (the previous
	// page's end) and, unless it is the last, carries at least one byte
	// and ends past its start.
	BoundProgress Bound = "progress"
	// BoundMaxBytes: the diff is at most Options.MaxBytes (Verifier.MaxBytes)
	// long, by its manifest's byte_count, which no page may pass.
	BoundMaxBytes Bound = "max_bytes"
	// BoundIdle: bytes keep arriving; none for Options.IdleTimeout ends
	// the call.
	BoundIdle Bound = "idle"
)

// BoundError is an answer refused at one of the reader's bounds: on which
// page (1-based; 0 while connecting), at which byte offset, which bound
// and what came. Nothing of that page was written.
type BoundError struct {
	Page   int
	Offset int64
	Bound  Bound
	Detail string
}

// Error renders the refusal for a person.
func (e *BoundError) Error() string {
	if e.Page == 0 {
		return fmt.Sprintf("refused while connecting: %s: %s", e.Bound, e.Detail)
	}
	return fmt.Sprintf("refused page %d at byte %d: %s: %s", e.Page, e.Offset, e.Bound, e.Detail)
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
// answered an HTTP error or something that is not MCP, or redirected.
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
