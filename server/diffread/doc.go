// Package diffread is the reference reader of get_pull_request_diff
// (seed 000, DESIGN §5.2): it reads a pull request's whole diff from an
// agent-gateway Forgejo endpoint through the official MCP Go SDK client,
// following next_cursor until eof, and checks every page the way the
// contract leaves to clients — contiguous offsets, next_byte_offset,
// chunk_bytes, chunk_sha256, text against the bytes, one diff identity in
// every page's manifest — and at the end the assembled length and SHA-256
// against manifest.content.
//
// Verified bytes are streamed to an io.Writer page by page, so memory does
// not grow with the diff. A page is written only after all of its own
// checks passed; the whole-diff checks can only pass at the end, so a
// caller that must not keep a partial or unverified diff writes to a
// temporary file and keeps it only when Read returns no error (the
// `agent-gateway diff -o` command does exactly that).
//
// Failures are typed: *VerificationError (a page or the whole diff failed
// a check: which page, at which offset, what was expected and what came),
// *StaleError (cursor_stale: the pull request moved; start again),
// *ToolError (the tool answered another error) and *CallError (the MCP
// call itself failed). The package depends on nothing of the gateway's
// own code, so other programs can import it.
package diffread
