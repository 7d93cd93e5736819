// Package evidence verifies a Forgejo PR diff evidence entity
// (forgejo.pr-diff-evidence.v1, docs/architecture.md#evidence-entity) while
// it streams in, and hands back one window of the verified diff.
//
// It is hand-written on purpose: no JSON or base64 library checks what the
// contract needs (duplicate members at every level, canonical base64 with no
// escapes, a whole-body hash compared only at closure) in constant memory.
//
// # Memory
//
// A call holds one 16 KiB input buffer, a 12 KiB decode scratch (three
// quarters of the input buffer: the base64 of one buffer), at most one
// candidate window of Request.Window (≤ 32 KiB) bytes, a SHA-256 state and the
// metadata: every member except "data", capped at 64 KiB. Memory does not grow
// with the diff; there is no total size cap.
//
// # Decisions the contract leaves open
//
//   - The metadata budget counts every entity byte outside the contents of
//     the "data" string: member names, punctuation, whitespace and the other
//     values. An endless run of whitespace is therefore refused like an
//     oversized member.
//   - Every object whose shape docs/architecture.md#evidence-entity fixes
//     refuses unknown members, not only the top level: the schema is
//     versioned, so a new member is a new schema. Every member shown there is
//     required; only observations.target_tip.oid and
//     observations.original_fork.repository_id may be null.
//   - Leading and trailing JSON whitespace (space, tab, CR, LF) around the
//     top-level object is allowed, because it is part of a JSON text and Go's
//     json.Encoder (which Forgejo uses) ends its output with a newline; any
//     other trailing byte, a byte order mark included, is refused.
//   - Member names are compared after JSON unescaping, so "d\u0061ta" is the
//     member "data" (and a duplicate of it). Escapes are accepted in metadata
//     strings (a lone surrogate is refused as invalid Unicode) but refused
//     inside "data", where any escape is non-canonical base64.
//   - The manifest keeps each metadata value exactly as received (string
//     escapes and number spelling included), drops insignificant whitespace
//     and orders members as docs/architecture.md#evidence-entity shows them
//     at every level, so equal entities give equal manifests whatever order
//     their members came in.
//   - Labels (branch_b64) may be empty: "" is the canonical base64 of zero
//     bytes, and the contract asks only for canonical base64.
//   - A requested offset beyond the verified byte count is cursor_stale (see
//     ErrOffsetBeyondEnd).
//   - Read errors: a *toolerr.Error from the reader is returned unchanged (the
//     strict transport reports framing and timeouts that way); io.EOF and
//     io.ErrUnexpectedEOF before closure are a truncated entity
//     (evidence_malformed); any other error is upstream_unavailable with the
//     cause kept for errors.Is and errors.As.
package evidence
