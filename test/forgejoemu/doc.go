// Package forgejoemu is a test double of Forgejo's native HTTP API ("Core").
//
// It serves the routes the gateway reads (repository search, repository,
// pull request list, pull request and the pull request diff with its
// evidence entity) with Forgejo's status codes, JSON field
// names, error bodies, pagination headers and token-scope semantics, over a
// real loopback TCP listener, so that the gateway's strict upstream transport
// talks to it exactly as it would to a forge.
//
// Repositories are real bare git repositories created with the git binary in
// a directory of the emulator's own. Commits are built with git plumbing (blobs,
// a temporary index, write-tree, commit-tree, update-ref) with fixed dates, so
// object IDs are deterministic, and paths with non-UTF-8 bytes, binary content
// and renames are what git itself makes of them. Pull requests keep Forgejo's
// stored merge base and hidden refs/pull/<index>/head ref.
//
// Fault switches (SetFault) make a route group answer with a redirect, a gzip
// body, a slow start or slow body, a reset connection, a chunked body, altered
// headers or an error status, and every request is recorded (Requests) so tests
// can assert what a client sent, e.g. that no Authorization header left it.
//
// Layout, for whoever extends it: emulator.go (server life cycle), state.go
// (the shared state behind one mutex), routes.go (the one route table),
// auth.go and scopes.go (caller and token scopes), respond.go (JSON and error
// bodies), pagination.go, repos.go and pulls.go (domain and handlers),
// convert.go (Forgejo's JSON shapes), git.go (git plumbing), diff.go (the
// PR diff and its evidence entity, with EvidenceFault and SetSyntheticDiff),
// faults.go and faultwriter.go, record.go, seed.go.
//
// Adding a route: register it in router (routes.go) inside the group whose
// scope category Forgejo uses for it, so requireScope and, under
// /repos/{owner}/{repo}, repoAssignment have run; read callerFrom and
// repoFrom from the request context; answer with writeJSON, writeError or
// writeNotFound, and for lists parseListOptions, listOptions.bounds and
// setPaginationHeaders. A route that streams a large body sets
// Content-Length before writing, so faults stream it instead of buffering.
// Never run git while holding Emulator.mu.
package forgejoemu
