package forgejoemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends a POST with a JSON body and an optional Authorization value.
func post(t *testing.T, e *Emulator, path, auth string, body any) answer {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, e.URL()+path, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := plainClient().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read: %v", path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: rb, resp: resp}
}

// grantFixture is a seeded emulator with one grant prepared for the bot.
type grantFixture struct {
	e     *Emulator
	d     *Demo
	g     Grant
	base  string // /api/v1/repos/demo/gateway/agent-work-grants/<id>
	botAu string
}

func newGrantFixture(t *testing.T) grantFixture {
	t.Helper()
	e, d := seeded(t)
	g, err := e.PrepareGrant(d.Owner, d.PublicRepo, d.Bot, d.Owner, GrantProposal{Task: "Triage the open bugs ✓", Summary: "Triage"})
	if err != nil {
		t.Fatal(err)
	}
	return grantFixture{e: e, d: d, g: g, botAu: tokenAuth(d.BotToken),
		base: fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/%d", d.Owner, d.PublicRepo, g.ID)}
}

func triple(digest string) map[string]any {
	return map[string]any{"proposal_schema": ProposalSchema, "proposal_version": 1, "proposal_digest": digest}
}

func submitBody(digest, key, title, body string) map[string]any {
	m := triple(digest)
	m["request_key"], m["title"], m["body"] = key, title, body
	return m
}

const key1 = "0f8fad5b-d9cb-469f-a165-70867728950e"

// TestGrantLifeCycle walks one grant from preparation to withdrawal and
// checks every native answer on the way.
func TestGrantLifeCycle(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	e, d, g := f.e, f.d, f.g
	if g.State != GrantAwaitingAgent || g.StateRevision != 1 || len(g.Digest) != 64 {
		t.Fatalf("prepared grant = %+v", g)
	}

	a := get(t, e, f.base, f.botAu)
	if a.status != 200 {
		t.Fatalf("GET grant: %d %s", a.status, a.body)
	}
	got := decode[apiGrant](t, a)
	if got.ID != g.ID || got.Agent.Login != d.Bot || got.Repository.ID != g.RepositoryID || got.Proposal.Digest != g.Digest ||
		got.Proposal.Task != "Triage the open bugs ✓" || got.State != GrantAwaitingAgent || got.ApprovedBy != nil {
		t.Fatalf("grant = %+v", got)
	}

	// Submitting before confirmation and approval is a conflict.
	if a := post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, key1, "t", "b")); a.status != 409 {
		t.Fatalf("submit before approval: %d %s", a.status, a.body)
	}
	// Invalid bodies are 400.
	for name, body := range map[string]any{
		"unknown member":  map[string]any{"proposal_schema": ProposalSchema, "proposal_version": 1, "proposal_digest": g.Digest, "approved": true},
		"string version":  map[string]any{"proposal_schema": ProposalSchema, "proposal_version": "1", "proposal_digest": g.Digest},
		"upper digest":    triple(strings.ToUpper(g.Digest)),
		"missing digest":  map[string]any{"proposal_schema": ProposalSchema, "proposal_version": 1},
		"other schema":    map[string]any{"proposal_schema": "agent_work_grant.v2", "proposal_version": 1, "proposal_digest": g.Digest},
		"version 2":       map[string]any{"proposal_schema": ProposalSchema, "proposal_version": 2, "proposal_digest": g.Digest},
		"not even object": []int{1},
	} {
		if a := post(t, e, f.base+"/confirm", f.botAu, body); a.status != 400 {
			t.Fatalf("confirm with %s: %d %s", name, a.status, a.body)
		}
	}
	if a := post(t, e, f.base+"/confirm", f.botAu, triple(strings.Repeat("0", 64))); a.status != 409 {
		t.Fatalf("confirm with another digest: %d %s", a.status, a.body)
	}
	a = post(t, e, f.base+"/confirm", f.botAu, triple(g.Digest))
	if got := decode[apiGrant](t, a); a.status != 200 || got.State != GrantAwaitingHuman || got.StateRevision != 2 || got.AgentConfirmedAt == nil {
		t.Fatalf("confirm: %d %s", a.status, a.body)
	}
	// The identical confirmation again changes nothing.
	a = post(t, e, f.base+"/confirm", f.botAu, triple(g.Digest))
	if got := decode[apiGrant](t, a); a.status != 200 || got.StateRevision != 2 {
		t.Fatalf("repeated confirm: %d %s", a.status, a.body)
	}
	if err := e.ApproveGrant(g.ID, d.Bot); !errors.Is(err, ErrInvalid) {
		t.Fatalf("the agent approved its own grant: %v", err)
	}
	if err := e.ApproveGrant(g.ID, d.Owner); err != nil {
		t.Fatal(err)
	}

	body := strings.Repeat("Whole text — ünïcödé 🚀\n", 4000)
	a = post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, key1, "Bugs triaged", body))
	if a.status != 201 {
		t.Fatalf("submit: %d %s", a.status, a.body)
	}
	first := decode[apiGrantSubmission](t, a)
	s := first.Submission
	if s.RequestKey != key1 || s.Outcome != OutcomeSubmitted || s.ReviewState != ReviewAwaitingReview || s.GrantID != g.ID ||
		s.RepositoryID != g.RepositoryID || s.Actor.Login != d.Bot || s.Issue.ID < firstIssueID || s.Issue.Index < 1 ||
		first.Grant.State != GrantActive || first.Grant.SubmissionCount != 1 {
		t.Fatalf("receipt = %s", a.body)
	}
	// The Issue is the agent's, with the whole body.
	a = get(t, e, fmt.Sprintf("/api/v1/repos/%s/%s/issues/%d", d.Owner, d.PublicRepo, s.Issue.Index), f.botAu)
	issue := decode[apiIssue](t, a)
	if a.status != 200 || issue.Body != body || issue.Title != "Bugs triaged" || issue.Poster.UserName != d.Bot || issue.ID != s.Issue.ID {
		t.Fatalf("issue: %d (body equal: %v) %+v", a.status, issue.Body == body, issue.Poster)
	}

	// Same key, same content: the committed receipt, 200.
	a = post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, key1, "Bugs triaged", body))
	if replay := decode[apiGrantSubmission](t, a); a.status != 200 || replay.Submission != s {
		t.Fatalf("replay: %d %s", a.status, a.body)
	}
	// Same key, other content: 409.
	if a := post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, key1, "Bugs triaged", body+"!")); a.status != 409 {
		t.Fatalf("key reuse: %d %s", a.status, a.body)
	}
	if n := len(mustIssues(t, e, d)); n != 1 {
		t.Fatalf("%d issues after replays, want 1", n)
	}

	// Deleting the Issue tombstones the key.
	if err := e.DeleteIssue(d.Owner, d.PublicRepo, s.Issue.Index); err != nil {
		t.Fatal(err)
	}
	a = get(t, e, f.base+"/submissions/"+key1, f.botAu)
	if rb := decode[apiGrantSubmission](t, a); a.status != 200 || rb.Submission.Outcome != OutcomeIssueDeleted || rb.Submission.Issue != s.Issue {
		t.Fatalf("readback after deletion: %d %s", a.status, a.body)
	}
	a = post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, key1, "Bugs triaged", body))
	if rb := decode[apiGrantSubmission](t, a); a.status != 200 || rb.Submission.Outcome != OutcomeIssueDeleted {
		t.Fatalf("resubmit after deletion: %d %s", a.status, a.body)
	}
	if n := len(mustIssues(t, e, d)); n != 0 {
		t.Fatalf("resubmitting a deleted key created an issue (%d)", n)
	}

	// A rebound Issue says issue_binding_changed.
	const key2 = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
	a = post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, key2, "Second", ""))
	second := decode[apiGrantSubmission](t, a).Submission
	if err := e.RebindIssue(d.Owner, d.PublicRepo, second.Issue.Index); err != nil {
		t.Fatal(err)
	}
	a = get(t, e, f.base+"/submissions/"+key2, f.botAu)
	if rb := decode[apiGrantSubmission](t, a); rb.Submission.Outcome != OutcomeIssueBindingChanged {
		t.Fatalf("rebound: %s", a.body)
	}
	if a := get(t, e, f.base+"/submissions/7c9e6679-7425-40de-944b-e07fc1f90ae7", f.botAu); a.status != 404 {
		t.Fatalf("unknown key: %d", a.status)
	}

	// Withdrawal refuses new operations; receipts stay readable.
	if err := e.WithdrawGrant(g.ID, d.Owner); err != nil {
		t.Fatal(err)
	}
	if a := post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, "9b2f3c1e-6d4a-4f8b-9c7d-2e1f0a3b4c5d", "x", "y")); a.status != 409 {
		t.Fatalf("submit on a withdrawn grant: %d %s", a.status, a.body)
	}
	if a := post(t, e, f.base+"/confirm", f.botAu, triple(g.Digest)); a.status != 409 {
		t.Fatalf("confirm on a withdrawn grant: %d %s", a.status, a.body)
	}
	if a := get(t, e, f.base+"/submissions/"+key2, f.botAu); a.status != 200 {
		t.Fatalf("receipt after withdrawal: %d", a.status)
	}
	if got := decode[apiGrant](t, get(t, e, f.base, f.botAu)); got.State != GrantRevoked || got.WithdrawnAt == nil {
		t.Fatalf("withdrawn grant = %+v", got)
	}
}

func mustIssues(t *testing.T, e *Emulator, d *Demo) []Issue {
	t.Helper()
	is, err := e.Issues(d.Owner, d.PublicRepo)
	if err != nil {
		t.Fatal(err)
	}
	return is
}

// TestGrantAuthorization checks Forgejo's authorization of the grant
// routes: credential, token scopes, the grant's bot, repository access.
func TestGrantAuthorization(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	e, d, g := f.e, f.d, f.g
	if err := e.AddCollaborator(d.Owner, d.PublicRepo, "other-bot", "write"); err != nil {
		t.Fatal(err)
	}
	if err := e.AddCollaborator(d.Owner, d.PrivateRepo, d.Bot, "write"); err != nil {
		t.Fatal(err)
	}
	priv, err := e.PrepareGrant(d.Owner, d.PrivateRepo, d.Bot, d.Owner, GrantProposal{Task: "private"})
	if err != nil {
		t.Fatal(err)
	}
	privBase := fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/%d", d.Owner, d.PrivateRepo, priv.ID)
	other := tokenAuth(e.IssueToken("other-bot", "read:repository", "write:issue"))
	readOnly := tokenAuth(e.IssueToken(d.Bot, "read:repository"))
	owner := tokenAuth(e.IssueToken(d.Owner, "read:repository", "write:issue"))
	wrongRepo := fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/%d", d.Owner, d.PrivateRepo, g.ID)

	tests := []struct {
		name   string
		method string
		path   string
		auth   string
		status int
	}{
		{"anonymous", "GET", f.base, "", 401},
		{"anonymous list", "GET", "/api/v1/agent-work-grants", "", 401},
		{"bad token", "GET", f.base, tokenAuth("nope"), 401},
		{"agent reads", "GET", f.base, f.botAu, 200},
		{"read:repository is enough to read", "GET", f.base, readOnly, 200},
		{"confirm needs write:issue", "POST", f.base + "/confirm", readOnly, 403},
		{"submit needs write:issue", "POST", f.base + "/issues", readOnly, 403},
		{"readback needs read:issue", "GET", f.base + "/submissions/" + key1, readOnly, 403},
		{"wrong bot reads", "GET", f.base, other, 403},
		{"wrong bot confirms", "POST", f.base + "/confirm", other, 403},
		{"owner looks on", "GET", f.base, owner, 200},
		{"owner cannot confirm for the bot", "POST", f.base + "/confirm", owner, 403},
		{"grant of another repository", "GET", wrongRepo, f.botAu, 404},
		{"unknown grant", "GET", fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/99999", d.Owner, d.PublicRepo), f.botAu, 404},
		{"grant id not a number", "GET", fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/x", d.Owner, d.PublicRepo), f.botAu, 404},
		{"private grant, collaborating agent", "GET", privBase, f.botAu, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a answer
			if tc.method == "GET" {
				a = get(t, e, tc.path, tc.auth)
			} else {
				a = post(t, e, tc.path, tc.auth, triple(g.Digest))
			}
			if a.status != tc.status {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, a.status, a.body, tc.status)
			}
		})
	}

	// Lost access: 404 on the private repository, 403 on the public one.
	if err := e.RemoveCollaborator(d.Owner, d.PrivateRepo, d.Bot); err != nil {
		t.Fatal(err)
	}
	if a := get(t, e, privBase, f.botAu); a.status != 404 {
		t.Fatalf("private grant after lost access: %d %s", a.status, a.body)
	}
	if err := e.RemoveCollaborator(d.Owner, d.PublicRepo, d.Bot); err != nil {
		t.Fatal(err)
	}
	if a := post(t, e, f.base+"/confirm", f.botAu, triple(g.Digest)); a.status != 403 {
		t.Fatalf("public grant after lost access: %d %s", a.status, a.body)
	}
	// A grant the bot lost access to is not listed.
	list := decode[[]apiGrant](t, get(t, e, "/api/v1/agent-work-grants?state=all", f.botAu))
	if len(list) != 0 {
		t.Fatalf("list after lost access = %d grants", len(list))
	}
	if _, err := e.PrepareGrant(d.Owner, d.PublicRepo, d.Bot, d.Owner, GrantProposal{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("prepared a grant for a non-collaborator: %v", err)
	}
}

// TestGrantListPagination: 31 pending grants across pages, with Forgejo's
// Link and X-Total-Count, at the requested and at a clamped width.
func TestGrantListPagination(t *testing.T) {
	t.Parallel()
	e, d := seeded(t)
	for i := 0; i < 31; i++ {
		if _, err := e.PrepareGrant(d.Owner, d.PublicRepo, d.Bot, d.Owner, GrantProposal{Task: fmt.Sprint("task ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	revoked, _ := e.PrepareGrant(d.Owner, d.PublicRepo, d.Bot, d.Owner, GrantProposal{Task: "gone"})
	if err := e.WithdrawGrant(revoked.ID, d.Owner); err != nil {
		t.Fatal(err)
	}
	if err := e.AddCollaborator(d.Owner, d.PublicRepo, "other-bot", "write"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PrepareGrant(d.Owner, d.PublicRepo, "other-bot", d.Owner, GrantProposal{Task: "not yours"}); err != nil {
		t.Fatal(err)
	}
	au := tokenAuth(d.BotToken)
	walk := func(query string) (pages, n int) {
		seen := map[int64]bool{}
		for page := 1; ; page++ {
			a := get(t, e, fmt.Sprintf("/api/v1/agent-work-grants?limit=30&page=%d%s", page, query), au)
			items := decode[[]apiGrant](t, a)
			for _, g := range items {
				if seen[g.ID] || g.Agent.Login != d.Bot {
					t.Fatalf("page %d: grant %d repeated or not the bot's", page, g.ID)
				}
				seen[g.ID] = true
			}
			if !strings.Contains(a.header.Get("Link"), `rel="next"`) {
				return page, len(seen)
			}
			if page > 40 {
				t.Fatal("no end")
			}
		}
	}
	a := get(t, e, "/api/v1/agent-work-grants?limit=30&page=1", au)
	if a.header.Get("X-Total-Count") != "31" || len(decode[[]apiGrant](t, a)) != 30 {
		t.Fatalf("page 1: total %q, %s", a.header.Get("X-Total-Count"), a.header.Get("Link"))
	}
	if pages, n := walk(""); pages != 2 || n != 31 {
		t.Fatalf("width 30: %d pages, %d grants", pages, n)
	}
	e.SetGrantPageClamp(7)
	if pages, n := walk(""); pages != 5 || n != 31 {
		t.Fatalf("clamped to 7: %d pages, %d grants", pages, n)
	}
	e.SetGrantPageClamp(0)
	if _, n := walk("&state=all"); n != 32 {
		t.Fatalf("state=all: %d grants", n)
	}
	if _, n := walk("&state=revoked"); n != 1 {
		t.Fatalf("state=revoked: %d grants", n)
	}
	if a := get(t, e, "/api/v1/agent-work-grants?state=pending", au); a.status != 400 {
		t.Fatalf("bad state: %d", a.status)
	}
}

// TestGrantFaults: the grant faults act after the route committed, and
// GrantPosts counts every POST that arrived.
func TestGrantFaults(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	e, d, g := f.e, f.d, f.g
	post(t, e, f.base+"/confirm", f.botAu, triple(g.Digest))
	if err := e.ApproveGrant(g.ID, d.Owner); err != nil {
		t.Fatal(err)
	}
	e.ResetRequests()

	// Dropped after commit: no response at all, but the Issue exists.
	e.SetGrantFault(GrantOpSubmit, GrantFault{Kind: GrantFaultDrop, Times: 1})
	req, _ := http.NewRequest(http.MethodPost, e.URL()+f.base+"/issues", strings.NewReader(mustMarshal(t, submitBody(g.Digest, key1, "t", "b"))))
	req.Header.Set("Authorization", f.botAu)
	if resp, err := plainClient().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("dropped submission answered %d", resp.StatusCode)
	}
	if n := len(mustIssues(t, e, d)); n != 1 {
		t.Fatalf("dropped submission did not commit: %d issues", n)
	}
	if a := get(t, e, f.base+"/submissions/"+key1, f.botAu); a.status != 200 {
		t.Fatalf("readback after drop: %d", a.status)
	}

	const key2 = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
	e.SetGrantFault(GrantOpSubmit, GrantFault{Kind: GrantFaultMalformed, Times: 1})
	if a := post(t, e, f.base+"/issues", f.botAu, submitBody(g.Digest, key2, "t", "b")); a.status != 201 || json.Valid(a.body) {
		t.Fatalf("malformed: %d %s", a.status, a.body)
	}
	e.SetGrantFault(GrantOpGetSubmission, GrantFault{Kind: GrantFaultMutate, Times: 1, Mutate: func(v any) any {
		v.(map[string]any)["submission"].(map[string]any)["review_state"] = "accepted"
		return v
	}})
	if a := get(t, e, f.base+"/submissions/"+key2, f.botAu); !strings.Contains(string(a.body), `"review_state":"accepted"`) {
		t.Fatalf("mutated: %s", a.body)
	}
	e.SetGrantFault(GrantOpConfirm, GrantFault{Kind: GrantFaultStatus, Status: 502})
	if a := post(t, e, f.base+"/confirm", f.botAu, triple(g.Digest)); a.status != 502 || !strings.Contains(string(a.body), `"state":"active"`) {
		t.Fatalf("status fault: %d %s", a.status, a.body)
	}
	e.ClearGrantFaults()
	if got := e.GrantPosts(); got != (GrantPostCounts{Confirm: 1, Submit: 2}) {
		t.Fatalf("GrantPosts = %+v", got)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
