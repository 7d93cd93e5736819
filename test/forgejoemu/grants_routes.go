package forgejoemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
)

// grantBase is the route of one grant under a repository.
const grantBase = "/repos/{owner}/{repo}/agent-work-grants/{grant}"

// maxGrantRequestBody bounds a confirmation or submission body. It is far
// above the gateway's 1 MiB MCP request limit, so only Core's own checks
// refuse text.
const maxGrantRequestBody = 8 << 20

// maxIssueTitle is the length (in characters) of Forgejo's issue title column.
const maxIssueTitle = 255

// requestKeyRe is a canonical lowercase UUIDv4.
var requestKeyRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// digestRe is a proposal digest: 64 lowercase hex characters.
var digestRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// grantRoutes registers the native agent work-grant routes and the Issue
// read that shows what a submission created. Like Forgejo's issue routes
// they sit in a group of their own under /api/v1, so the /repos group's
// rule (write:repository for every POST) does not apply: confirmation and
// submission need read:repository and write:issue
// (docs/architecture.md#agent-work-grant-contract).
func (e *Emulator) grantRoutes(r chi.Router) {
	read := e.requireTokenScopes(scopeNeed{categoryRepository, levelRead})
	readIssue := e.requireTokenScopes(scopeNeed{categoryRepository, levelRead}, scopeNeed{categoryIssue, levelRead})
	write := e.requireTokenScopes(scopeNeed{categoryRepository, levelRead}, scopeNeed{categoryIssue, levelWrite})
	approve := e.requireTokenScopes(scopeNeed{categoryRepository, levelWrite})
	r.Group(func(r chi.Router) {
		r.Use(e.stockHasNoGrants)
		r.Use(e.requireSignedIn)
		r.With(read).Get("/agent-work-grants", e.handleGrantList)
		r.With(read, e.repoAssignment).Get(grantBase, e.handleGrantGet)
		r.With(write, e.repoAssignment).Post(grantBase+"/confirm", e.handleGrantConfirm)
		r.With(write, e.repoAssignment).Post(grantBase+"/issues", e.handleGrantSubmit)
		r.With(readIssue, e.repoAssignment).Get(grantBase+"/submissions/{key}", e.handleSubmissionGet)
		r.With(readIssue, e.repoAssignment).Get("/repos/{owner}/{repo}/issues/{index}", e.handleIssueGet)
		// Not a Core route: the emulator's stand-in for browser approval (grants_approve.go).
		r.With(approve, e.repoAssignment).Post(grantBase+"/approve", e.handleGrantApprove)
	})
}

// requireSignedIn is Forgejo's reqToken: these routes have no anonymous view.
func (e *Emulator) requireSignedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if callerFrom(r.Context()).user == nil {
			e.writeError(w, http.StatusUnauthorized, "token is required")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// scopeNeed is one category at one level.
type scopeNeed struct {
	cat   scopeCategory
	level scopeLevel
}

// requireTokenScopes is tokenRequiresScopes with explicit levels per
// category (the grant routes need read:repository with write:issue, which
// the method-derived level of requireScope cannot say). A missing scope
// is 403 before the route runs; a public-only token is recorded.
func (e *Emulator) requireTokenScopes(needs ...scopeNeed) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := callerFrom(r.Context())
			if !c.scoped {
				next.ServeHTTP(w, r)
				return
			}
			set, err := parseScope(c.scope)
			if err != nil {
				e.writeError(w, http.StatusForbidden, "checking scope failed: "+err.Error())
				return
			}
			var missing []string
			for _, n := range needs {
				if !set.has(n.level, n.cat) {
					missing = append(missing, n.level.String()+":"+string(n.cat))
				}
			}
			if len(missing) > 0 {
				e.writeError(w, http.StatusForbidden,
					"token does not have at least one of required scope(s): ["+strings.Join(missing, " ")+"]")
				return
			}
			if set.publicOnly {
				scoped := *c
				scoped.publicOnly = true
				r = r.WithContext(context.WithValue(r.Context(), callerKey{}, &scoped))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// grantStateFilter parses the list's state parameter: absent is every
// state but revoked; "all" is every state.
func grantStateFilter(v string) (func(string) bool, bool) {
	switch v {
	case "":
		return func(s string) bool { return s != GrantRevoked }, true
	case "all":
		return func(string) bool { return true }, true
	case GrantAwaitingAgent, GrantAwaitingHuman, GrantActive, GrantRevoked:
		return func(s string) bool { return s == v }, true
	}
	return nil, false
}

// handleGrantList is GET /agent-work-grants: the caller's grants (those
// naming the caller as agent, on repositories it still collaborates on and
// may see), by ID, paginated like every Forgejo list.
func (e *Emulator) handleGrantList(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	keep, ok := grantStateFilter(r.URL.Query().Get("state"))
	if !ok {
		e.writeError(w, http.StatusBadRequest, "invalid state: "+r.URL.Query().Get("state"))
		return
	}
	opts := parseListOptions(r)
	e.mu.Lock()
	gs := e.grantsLocked()
	if gs.pageClamp > 0 && opts.pageSize > gs.pageClamp {
		opts.pageSize = gs.pageClamp
	}
	var mine []*grant
	for _, g := range gs.grants {
		if g.agent == c.user && keep(g.state) && g.repo.collaboratesLocked(c.user) && !(c.publicOnly && g.repo.private) {
			mine = append(mine, g)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].id < mine[j].id })
	start, end := opts.bounds(len(mine))
	items := make([]apiGrant, 0, end-start)
	for _, g := range mine[start:end] {
		items = append(items, e.toAPIGrantLocked(g))
	}
	e.mu.Unlock()
	e.setPaginationHeaders(w, r, len(mine), opts)
	e.answerGrant(w, r, GrantOpList, http.StatusOK, items)
}

// grantAccess is what the caller may do with a resolved grant.
type grantAccess int

const (
	grantView grantAccess = iota + 1 // a repository administrator looking on
	grantAct                         // the grant's agent, still collaborating
)

// resolveGrantLocked finds {grant} within the assigned repository and
// decides the caller's access: the agent acts while it collaborates; a
// repository administrator may look; anyone else who can see the
// repository is refused with 403. Callers hold e.mu.
func (e *Emulator) resolveGrantLocked(r *http.Request) (*grant, grantAccess, int, string) {
	rc := repoFrom(r.Context())
	c := callerFrom(r.Context())
	id, err := strconv.ParseInt(chi.URLParam(r, "grant"), 10, 64)
	g := e.grantsLocked().grants[id]
	if err != nil || id <= 0 || g == nil || g.repo != rc.repo {
		return nil, 0, http.StatusNotFound, "agent work grant does not exist"
	}
	switch {
	case c.user == g.agent && g.repo.collaboratesLocked(c.user):
		return g, grantAct, 0, ""
	case c.user == g.agent:
		return nil, 0, http.StatusForbidden, "the agent no longer collaborates on this repository"
	case rc.mode >= accessAdmin:
		return g, grantView, 0, ""
	default:
		return nil, 0, http.StatusForbidden, "the grant names another agent"
	}
}

// handleGrantGet is GET …/agent-work-grants/{grant}.
func (e *Emulator) handleGrantGet(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	g, _, status, msg := e.resolveGrantLocked(r)
	var body apiGrant
	if g != nil {
		body = e.toAPIGrantLocked(g)
	}
	e.mu.Unlock()
	if g == nil {
		e.writeGrantError(w, status, msg)
		return
	}
	e.answerGrant(w, r, GrantOpGet, http.StatusOK, body)
}

// confirmRequest is the body of a confirmation: the proposal triple only.
type confirmRequest struct {
	Schema  *string `json:"proposal_schema"`
	Version *int    `json:"proposal_version"`
	Digest  *string `json:"proposal_digest"`
}

func (q confirmRequest) check() string {
	switch {
	case q.Schema == nil || q.Version == nil || q.Digest == nil:
		return "proposal_schema, proposal_version and proposal_digest are required"
	case *q.Schema != ProposalSchema:
		return "unsupported proposal_schema"
	case *q.Version != ProposalVersion:
		return "unsupported proposal_version"
	case !digestRe.MatchString(*q.Digest):
		return "proposal_digest must be 64 lowercase hex characters"
	}
	return ""
}

// submitRequest is the body of a submission: the triple plus request_key,
// title and body, and nothing else.
type submitRequest struct {
	confirmRequest
	RequestKey *string `json:"request_key"`
	Title      *string `json:"title"`
	Body       *string `json:"body"`
}

func (q submitRequest) check() string {
	if msg := q.confirmRequest.check(); msg != "" {
		return msg
	}
	switch {
	case q.RequestKey == nil || q.Title == nil || q.Body == nil:
		return "request_key, title and body are required"
	case !requestKeyRe.MatchString(*q.RequestKey):
		return "request_key must be a canonical lowercase UUIDv4"
	case strings.TrimSpace(*q.Title) == "":
		return "title must not be empty"
	case utf8.RuneCountInString(*q.Title) > maxIssueTitle:
		return "title is longer than 255 characters"
	}
	return ""
}

// decodeGrantBody decodes a request body strictly: one JSON object, no
// unknown member, nothing after it.
func decodeGrantBody(r *http.Request, dst any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxGrantRequestBody+1))
	if err != nil {
		return err
	}
	if len(b) > maxGrantRequestBody {
		return errors.New("request body too large")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the request object")
	}
	return nil
}

// handleGrantConfirm is POST …/{grant}/confirm: the agent repeats the
// exact proposal triple. awaiting_agent becomes awaiting_human; repeating
// the identical confirmation later changes nothing and answers 200 too.
// Confirmation is not approval: only a human makes a grant active.
func (e *Emulator) handleGrantConfirm(w http.ResponseWriter, r *http.Request) {
	var q confirmRequest
	if err := decodeGrantBody(r, &q); err != nil {
		e.writeError(w, http.StatusBadRequest, "invalid request body")
		return
	}
	if msg := q.check(); msg != "" {
		e.writeError(w, http.StatusBadRequest, msg)
		return
	}
	e.mu.Lock()
	g, access, status, msg := e.resolveGrantLocked(r)
	switch {
	case g == nil:
	case access != grantAct:
		g, status, msg = nil, http.StatusForbidden, "only the grant's agent may confirm it"
	case g.state == GrantRevoked:
		g, status, msg = nil, http.StatusConflict, "the grant has been withdrawn"
	case *q.Digest != g.digest:
		g, status, msg = nil, http.StatusConflict, "the proposal changed; read the grant again"
	case g.state == GrantAwaitingAgent:
		now := e.nowLocked()
		g.state, g.confirmed, g.updated = GrantAwaitingHuman, now, now
		g.revision++
	}
	var body apiGrant
	if g != nil {
		body = e.toAPIGrantLocked(g)
	}
	e.mu.Unlock()
	if g == nil {
		e.writeGrantError(w, status, msg)
		return
	}
	e.answerGrant(w, r, GrantOpConfirm, http.StatusOK, body)
}

// handleGrantSubmit is POST …/{grant}/issues: on an active grant, with
// the current digest, a new request key creates an Issue by the agent and
// answers 201; the same key with the same content answers 200 with the
// committed receipt (whatever became of the Issue since); the same key
// with other content is 409. A key is never available again.
func (e *Emulator) handleGrantSubmit(w http.ResponseWriter, r *http.Request) {
	var q submitRequest
	if err := decodeGrantBody(r, &q); err != nil {
		e.writeError(w, http.StatusBadRequest, "invalid request body")
		return
	}
	if msg := q.check(); msg != "" {
		e.writeError(w, http.StatusBadRequest, msg)
		return
	}
	c := callerFrom(r.Context())
	e.mu.Lock()
	g, access, status, msg := e.resolveGrantLocked(r)
	var s *submission
	switch {
	case g == nil:
	case access != grantAct:
		status, msg = http.StatusForbidden, "only the grant's agent may submit under it"
	case g.state == GrantRevoked:
		status, msg = http.StatusConflict, "the grant has been withdrawn"
	case g.state != GrantActive:
		status, msg = http.StatusConflict, "the grant is not active: it awaits "+strings.TrimPrefix(g.state, "awaiting_")
	case *q.Digest != g.digest:
		status, msg = http.StatusConflict, "the proposal changed; read the grant again"
	default:
		if prior := g.subs[*q.RequestKey]; prior != nil {
			if prior.digest != *q.Digest || prior.title != *q.Title || prior.body != *q.Body {
				status, msg = http.StatusConflict, "the request key was used with different content"
			} else {
				s, status = prior, http.StatusOK
			}
		} else {
			s, status = e.submitLocked(g, c.user, *q.RequestKey, *q.Digest, *q.Title, *q.Body), http.StatusCreated
		}
	}
	var body apiGrantSubmission
	if s != nil {
		body = e.toAPISubmissionLocked(g, s)
	}
	e.mu.Unlock()
	if s == nil {
		e.writeGrantError(w, status, msg)
		return
	}
	e.answerGrant(w, r, GrantOpSubmit, status, body)
}

// handleSubmissionGet is GET …/{grant}/submissions/{key}: the receipt of a
// committed key, readable after withdrawal so a lost answer can be
// reconciled.
func (e *Emulator) handleSubmissionGet(w http.ResponseWriter, r *http.Request) {
	key := pathParam(r, "key")
	e.mu.Lock()
	g, _, status, msg := e.resolveGrantLocked(r)
	var s *submission
	if g != nil {
		if s = g.subs[key]; s == nil {
			status, msg = http.StatusNotFound, "no submission with this request key"
		}
	}
	var body apiGrantSubmission
	if s != nil {
		body = e.toAPISubmissionLocked(g, s)
	}
	e.mu.Unlock()
	if s == nil {
		e.writeGrantError(w, status, msg)
		return
	}
	e.answerGrant(w, r, GrantOpGetSubmission, http.StatusOK, body)
}

// handleIssueGet is GET /repos/{owner}/{repo}/issues/{index} for Issues
// created by submissions (the emulator keeps no other Issues).
func (e *Emulator) handleIssueGet(w http.ResponseWriter, r *http.Request) {
	rc := repoFrom(r.Context())
	c := callerFrom(r.Context())
	index, err := strconv.ParseInt(chi.URLParam(r, "index"), 10, 64)
	e.mu.Lock()
	is := e.grantsLocked().byIndex[indexKey(rc.repo.id, index)]
	var body apiIssue
	if err == nil && is != nil {
		body = e.toAPIIssueLocked(is, c.user)
	}
	e.mu.Unlock()
	if err != nil || is == nil {
		e.writeNotFound(w, "")
		return
	}
	e.writeJSON(w, http.StatusOK, body)
}

// writeGrantError answers a refusal: 404 in Forgejo's not-found shape,
// anything else as {"message","url"}.
func (e *Emulator) writeGrantError(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusNotFound {
		e.writeNotFound(w, msg)
		return
	}
	e.writeError(w, status, msg)
}
