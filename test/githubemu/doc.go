// Package githubemu is a test double of the parts of GitHub's REST API the
// gateway uses: the App installation token route, the repository Contents
// route and the branch route.
//
// Repositories are real bare git repositories built with the git binary
// (plumbing only: hash-object, update-index on a private index, write-tree,
// commit-tree, update-ref, with fixed dates, so object IDs are
// deterministic). The Contents route answers from them the way GitHub does:
// a file is {"type":"file","encoding":"base64",…} with its base64 broken
// into 60-character lines; a file over 1 MiB has encoding "none" and empty
// content; a directory is an array, or {"type":"dir","entries":[…]} under
// the object media type; a symlink whose target is a regular file in the
// repository answers with the target file (whose path differs); any other
// symlink answers {"type":"symlink","target":…}; a gitlink answers
// {"type":"submodule",…}.
//
// The token route verifies the App JWT the way GitHub does (RS256 against
// the App's public key, iss the App ID, iat not in the future, exp in the
// future and at most 10 minutes ahead) and mints random tokens with a
// configurable lifetime. Like GitHub it reads the request body: without one
// a token may do everything on every repository of the installation; with
// "repositories" and "permissions" it covers only those (a repository
// outside the installation, an unknown permission or member is 422), and
// Mints records each body. The Contents and branch routes accept only a
// live token that covers the repository (else 404) with contents
// permission (else 403).
//
// Fault switches (SetFault) make a route answer with a redirect, a huge
// body with or without a (truthful or false) Content-Length, any status with
// any headers and body, malformed JSON or a gzip body. Counters
// (ContentsRequests, TokenMints) and the request log (Requests) let tests
// assert what the gateway sent, and that a refused call sent nothing. The
// log is a bounded ring (test/emurecord: the newest requests within a
// count and bytes of heads); GET /__emulator/record (emurecord.Path) tells
// how much it holds, unrecorded.
// HoldRequest stalls one request until the test releases it, to change the
// gateway's state at a known point of a multi-request operation.
//
// Layout: emulator.go (life cycle, routing, recording), git.go (plumbing),
// repos.go (building repositories), contents.go (Contents and branch
// routes), app.go (JWT check, installations, tokens), faults.go, hold.go,
// seed.go (a ready-made repository with every case the documents toolset
// must handle).
package githubemu
