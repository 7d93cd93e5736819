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
// The record is a bounded ring (test/emurecord: the newest requests within
// a count and bytes of heads and bodies); GET /__emulator/record
// (emurecord.Path) tells how much it holds, unrecorded.
// SetLinkMode makes the list routes send Link only on a page with a next one
// (LinkOnlyWhileMore), as forges other than Forgejo and Gitea do, or never
// (LinkNone), as behind a proxy that drops it.
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
//
// # Agent work grants
//
// grants.go, grants_json.go, grants_routes.go and grants_faults.go add
// Core's native agent work grants. Their JSON is not public Forgejo API; it
// is designed from the agent work grant contract
// (docs/architecture.md#agent-work-grant-contract) and is this:
//
//	GET  /api/v1/agent-work-grants?limit=&page=&state=   → [grant…] with X-Total-Count and Link
//	GET  /api/v1/repos/{owner}/{repo}/agent-work-grants/{id}                 → 200 grant
//	POST …/{id}/confirm  {proposal_schema, proposal_version, proposal_digest} → 200 grant
//	POST …/{id}/issues   {triple…, request_key, title, body} → 201 new / 200 replay {grant, submission}
//	GET  …/{id}/submissions/{request_key}                                   → 200 {grant, submission}
//	GET  /api/v1/repos/{owner}/{repo}/issues/{index}  → Forgejo's issue object (Issues made by submissions)
//	POST …/{id}/approve  (emulator only: Core approves in the browser)      → 200 grant
//
//	grant      {id, repository {id, owner, name, full_name, html_url},
//	            agent {id, login}, prepared_by {id, login}, approved_by {id, login}|null,
//	            state: awaiting_agent|awaiting_human|active|revoked, state_revision,
//	            proposal {schema: "agent_work_grant.v1", version: 1, digest: 64 hex, task, summary},
//	            submission_count, agent_confirmed_at|null, approved_at|null, withdrawn_at|null,
//	            created_at, updated_at}
//	submission {request_key, grant_id, repository_id, proposal {schema, version, digest},
//	            outcome: submitted|issue_deleted|issue_binding_changed,
//	            review_state: "awaiting_review", issue {id, index, html_url},
//	            actor {id, login}, created_at}
//
// The list holds the caller's grants (it is their agent and still
// collaborates on the repository), by ID; no state means every state but
// revoked, "all" means every state. Every route needs a signed-in caller
// (401). Token scopes: reads need read:repository, receipt and Issue reads
// also read:issue, confirmation and submission read:repository and
// write:issue (403 before the route); the emulator's approval needs
// write:repository and a human with write access who is not the agent
// (409 otherwise, and for a grant not awaiting_human). A repository the caller cannot see
// is 404; the agent that no longer collaborates, another user (another
// bot) or a non-agent POST is 403, though repository administrators may
// read a grant. Confirmation and submission bodies are strict (unknown
// member, wrong triple, non-canonical request key, empty or over-255-
// character title: 400). A withdrawn grant, a stale digest, a submission
// on a grant that is not active, and a request key reused with different
// content are 409. The state_revision is the server's own counter of state
// changes; no client sends it.
//
// Human operations are Go methods, never HTTP routes: PrepareGrant,
// ReviseGrant, ApproveGrant, WithdrawGrant, DeleteIssue (the receipt then
// says issue_deleted, keeps the Issue's historical ID, index and URL, and
// the key stays used), RebindIssue (issue_binding_changed) and
// RemoveCollaborator (lost access). SetGrantFault switches faults that act
// after a route committed (drop the connection, unexpected status,
// malformed or mutated body, stall); GrantPosts counts the POSTs that
// arrived; SetGrantPageClamp narrows the list's page width (with
// SetLinkMode(LinkNone), a Core that clamps and sends no Link).
//
// SetStock makes the emulator a stock forge without Core's extensions, as a
// real Gitea 1.27.3 answered: the evidence URL gives the plain diff as
// text/plain, and the grant routes 404 text/plain "404 page not found".
package forgejoemu
