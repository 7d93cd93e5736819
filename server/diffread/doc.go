// Package diffread is the reference reader of get_pull_request_diff
// (docs/architecture.md#pr-diff-contract): it reads a pull request's whole
// diff from an agent-gateway Forgejo endpoint through the official MCP Go SDK
// client, following next_cursor until eof, and checks every page the way the
// contract leaves to clients — contiguous offsets, next_byte_offset,
// chunk_bytes, chunk_sha256, text against the bytes, one diff identity in
// every page's manifest — and at the end the assembled length and SHA-256
// against manifest.content.
//
// It reads pages as strictly as the gateway writes them (DecodePage): the
// exact members of the page and of its manifest, none repeated, in another
// letter case or unknown, so that no other JSON reader of a page — jq,
// Python — can find another value in it than the one verified. Every
// answer is bounded: at most the 49,000-byte envelope, pages that start
// where the previous one ended and advance, optionally a longest diff
// (Options.MaxBytes), and an idle timeout (Options.IdleTimeout) rather
// than a total deadline, since the gateway itself has none.
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
// *BoundError (an answer outside the reader's bounds: which page, which
// bound), *StaleError (cursor_stale: the pull request moved; start
// again), *ToolError (the tool answered another error) and *CallError (the
// MCP call itself failed). The package depends only on leaves under
// upstream/ (the page type, the evidence manifest's shape, strictjson), so
// other programs can import it.
package diffread
