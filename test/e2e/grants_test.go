package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
)

// grantTools are the five authenticated tools of
// docs/architecture.md#agent-work-grant-contract.
var grantTools = []string{"confirm_agent_work_grant", "get_agent_work_grant", "get_agent_work_submission",
	"list_agent_work_grants", "submit_agent_work_proposal"}

// newKey returns a fresh canonical lowercase UUIDv4, as a client makes its
// durable request key.
func newKey(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// prepare has the demo owner prepare a grant for the demo bot on repo.
func prepare(t *testing.T, st *forgejoStack, repo, task string) forgejoemu.Grant {
	t.Helper()
	g, err := st.emu.PrepareGrant(st.demo.Owner, repo, st.demo.Bot, st.demo.Owner, forgejoemu.GrantProposal{Task: task, Summary: "summary of " + task})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ref is the owner/repo/grant_id of a grant as tool arguments.
func ref(g forgejoemu.Grant) map[string]any {
	return map[string]any{"owner": g.Owner, "repo": g.Repo, "grant_id": g.ID}
}

// withTriple is ref plus the grant's exact proposal triple.
func withTriple(g forgejoemu.Grant) map[string]any {
	m := ref(g)
	m["proposal_schema"], m["proposal_version"], m["proposal_digest"] = "agent_work_grant.v1", 1, g.Digest
	return m
}

// submitArgs are the arguments of a submission.
func submitArgs(g forgejoemu.Grant, key, title, body string) map[string]any {
	m := withTriple(g)
	m["request_key"], m["title"], m["body"] = key, title, body
	return m
}

// keyArgs are the arguments of a readback.
func keyArgs(g forgejoemu.Grant, key string) map[string]any {
	m := ref(g)
	m["request_key"] = key
	return m
}

// with returns a copy of m with k set to v, or removed when v is nil.
func with(m map[string]any, k string, v any) map[string]any {
	c := maps.Clone(m)
	if v == nil {
		delete(c, k)
	} else {
		c[k] = v
	}
	return c
}

// activate confirms a grant through the tool and approves it as the human.
func activate(t *testing.T, st *forgejoStack, s *mcp.ClientSession, g forgejoemu.Grant) {
	t.Helper()
	out, isErr := callTool(t, s, "confirm_agent_work_grant", withTriple(g))
	if isErr {
		t.Fatalf("confirm: %v", out)
	}
	if err := st.emu.ApproveGrant(g.ID, st.demo.Owner); err != nil {
		t.Fatal(err)
	}
}

func obj(t *testing.T, v any, path ...string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	for _, p := range path {
		if !ok {
			break
		}
		m, ok = m[p].(map[string]any)
	}
	if !ok {
		t.Fatalf("no object at %v in %v", path, v)
	}
	return m
}

func errorObj(t *testing.T, out map[string]any) map[string]any {
	t.Helper()
	return obj(t, out, "error")
}

// wantRefusal checks a native refusal: the code and native_status.
func wantRefusal(t *testing.T, out map[string]any, isErr bool, code string, status int) {
	t.Helper()
	if !isErr {
		t.Fatalf("want %s, got a result: %v", code, out)
	}
	e := errorObj(t, out)
	if e["code"] != code || e["native_status"] != float64(status) {
		t.Fatalf("want %s with native_status %d, got %v", code, status, e)
	}
}

// TestGrantToolsListing: the five grant tools are offered to a caller with
// a bearer, with the strict schemas of
// docs/architecture.md#agent-work-grant-contract; a caller without one
// still sees exactly the four anonymous tools.
func TestGrantToolsListing(t *testing.T) {
	st := startForgejoStack(t, nil)
	if got := toolNames(t, st.gw.Connect(t, "/mcp/forgejo", "")); !slices.Equal(got, anonymousTools) {
		t.Fatalf("anonymous tools/list = %v, want exactly %v", got, anonymousTools)
	}
	authed := st.gw.Connect(t, "/mcp/forgejo", st.demo.BotToken)
	want := slices.Sorted(slices.Values(slices.Concat(anonymousTools, []string{"get_pull_request_diff"}, grantTools)))
	if got := toolNames(t, authed); !slices.Equal(got, want) {
		t.Fatalf("authenticated tools/list = %v, want %v", got, want)
	}
	res, err := authed.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tool := range res.Tools {
		// An uncertain confirmation is read back before anything is
		// repeated (docs/architecture.md#agent-work-grant-contract), so
		// confirmation must not invite a blind retry.
		if tool.Name == "confirm_agent_work_grant" {
			if tool.Annotations == nil || tool.Annotations.IdempotentHint || tool.Annotations.ReadOnlyHint ||
				!strings.Contains(tool.Description, "get_agent_work_grant") {
				t.Fatalf("confirm_agent_work_grant annotations %+v, description %q", tool.Annotations, tool.Description)
			}
		}
		b, _ := json.Marshal(tool.InputSchema)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		schemas[tool.Name] = m
	}
	sub := schemas["submit_agent_work_proposal"]
	props := obj(t, sub, "properties")
	if sub["additionalProperties"] != false ||
		obj(t, props, "grant_id")["type"] != "integer" || obj(t, props, "grant_id")["minimum"] != float64(1) ||
		obj(t, props, "proposal_version")["maximum"] != float64(1) ||
		obj(t, props, "proposal_digest")["pattern"] != "^[0-9a-f]{64}$" ||
		!strings.Contains(obj(t, props, "request_key")["pattern"].(string), "-4[0-9a-f]{3}-[89ab]") {
		t.Fatalf("submit schema = %v", sub)
	}
	if req := sub["required"].([]any); len(req) != 9 {
		t.Fatalf("submit requires %v", req)
	}
	if _, ok := props["state_revision"]; ok {
		t.Fatal("the client must not supply state_revision")
	}
}

// TestGrantListPagination: 31 pending grants reach has_more=false across
// real pages, at Core's width and when Core clamps it; every page is one
// fresh authenticated request for page=N with limit=30, and no Link
// address is followed.
func TestGrantListPagination(t *testing.T) {
	st := startForgejoStack(t, nil)
	var ids []int64
	for i := 0; i < 31; i++ {
		ids = append(ids, prepare(t, st, st.demo.PublicRepo, fmt.Sprint("pending task ", i)).ID)
	}
	gone := prepare(t, st, st.demo.PublicRepo, "withdrawn")
	if err := st.emu.WithdrawGrant(gone.ID, st.demo.Owner); err != nil {
		t.Fatal(err)
	}
	s := st.gw.Connect(t, "/mcp/forgejo", st.demo.BotToken)
	walk := func(t *testing.T, args map[string]any) (int, []int64) { return walkGrants(t, st, s, args) }

	t.Run("width 30", func(t *testing.T) {
		pages, got := walk(t, map[string]any{})
		if pages != 2 || !slices.Equal(got, ids) {
			t.Fatalf("%d pages, grants %v, want 2 pages of %v", pages, got, ids)
		}
	})
	t.Run("state awaiting_agent", func(t *testing.T) {
		if _, got := walk(t, map[string]any{"state": "awaiting_agent"}); !slices.Equal(got, ids) {
			t.Fatalf("grants %v", got)
		}
	})
	t.Run("clamped to 7", func(t *testing.T) {
		st.emu.SetGrantPageClamp(7)
		defer st.emu.SetGrantPageClamp(0)
		pages, got := walk(t, map[string]any{})
		if pages != 5 || !slices.Equal(got, ids) {
			t.Fatalf("%d pages, grants %v, want 5 pages of %v", pages, got, ids)
		}
	})
	t.Run("all and revoked", func(t *testing.T) {
		if _, got := walk(t, map[string]any{"state": "all"}); len(got) != 32 {
			t.Fatalf("state=all: %d grants", len(got))
		}
		if _, got := walk(t, map[string]any{"state": "revoked"}); !slices.Equal(got, []int64{gone.ID}) {
			t.Fatalf("state=revoked: %v", got)
		}
	})
	t.Run("total", func(t *testing.T) {
		out, _ := callTool(t, s, "list_agent_work_grants", map[string]any{"page": 2})
		if out["total"] != float64(31) || out["has_more"] != false || len(out["grants"].([]any)) != 1 {
			t.Fatalf("page 2: %v", out)
		}
	})
	// Continuation holds even if Core clamps the width
	// (docs/architecture.md#agent-work-grant-contract). With 35
	// grants at a width of 10, Link says where the end is; without Link,
	// X-Total-Count is held against what each page held (not the 30 asked
	// for, which stopped after 20), and the short page 4 is followed by an
	// empty page 5 that ends the listing.
	t.Run("35 at width 10", func(t *testing.T) {
		for i := 31; i < 35; i++ {
			ids = append(ids, prepare(t, st, st.demo.PublicRepo, fmt.Sprint("pending task ", i)).ID)
		}
		st.emu.SetGrantPageClamp(10)
		defer st.emu.SetGrantPageClamp(0)
		if pages, got := walk(t, map[string]any{}); pages != 4 || !slices.Equal(got, ids) {
			t.Fatalf("with Link: %d pages, grants %v, want 4 pages of %v", pages, got, ids)
		}
		st.emu.SetLinkMode(forgejoemu.LinkNone)
		defer st.emu.SetLinkMode(forgejoemu.LinkForgejo)
		if pages, got := walk(t, map[string]any{}); pages != 5 || !slices.Equal(got, ids) {
			t.Fatalf("without Link: %d pages, grants %v, want 5 pages (the last empty) of %v", pages, got, ids)
		}
	})
}

// TestGrantListClampedLinesUp: Core clamps the width and the total lines
// up with the 30 asked for on an inner page: 40 grants at width 10 and 50
// at width 20, where (page−1)·30 + items = total on page 2. The listing
// reads every grant exactly once whether Core sends Forgejo's
// Link, Link only while more, or none; without a Link on the last page a
// short one is followed by one empty page, and it never stops early
// (docs/tools.md#continuation).
func TestGrantListClampedLinesUp(t *testing.T) {
	st := startForgejoStack(t, nil)
	s := st.gw.Connect(t, "/mcp/forgejo", st.demo.BotToken)
	var ids []int64
	grow := func(t *testing.T, n int) {
		for len(ids) < n {
			ids = append(ids, prepare(t, st, st.demo.PublicRepo, fmt.Sprint("pending task ", len(ids))).ID)
		}
	}
	for _, tc := range []struct {
		width, total int
		link         forgejoemu.LinkMode
		pages        int
	}{
		{10, 40, forgejoemu.LinkNone, 4},
		{10, 40, forgejoemu.LinkOnlyWhileMore, 4},
		{10, 40, forgejoemu.LinkForgejo, 4},
		{20, 50, forgejoemu.LinkNone, 4},
		{20, 50, forgejoemu.LinkOnlyWhileMore, 4},
		{20, 50, forgejoemu.LinkForgejo, 3},
	} {
		t.Run(fmt.Sprintf("%d at width %d, %v", tc.total, tc.width, tc.link), func(t *testing.T) {
			grow(t, tc.total)
			st.emu.SetGrantPageClamp(tc.width)
			defer st.emu.SetGrantPageClamp(0)
			st.emu.SetLinkMode(tc.link)
			defer st.emu.SetLinkMode(forgejoemu.LinkForgejo)
			if pages, got := walkGrants(t, st, s, map[string]any{}); pages != tc.pages || !slices.Equal(got, ids) {
				t.Fatalf("%d pages, grants %v, want %d pages of each of %v once", pages, got, tc.pages, ids)
			}
		})
	}
}

// walkGrants lists the bot's grants from page 1, following next_page until
// has_more is false (at most 40 pages), and returns the pages read and the
// grant IDs in order. Every page must be one fresh authenticated request for
// page=N with limit=30, never a Link address, and next_page exactly N+1.
func walkGrants(t *testing.T, st *forgejoStack, s *mcp.ClientSession, args map[string]any) (pages int, got []int64) {
	t.Helper()
	st.emu.ResetRequests()
	next := any(nil)
	for {
		a := maps.Clone(args)
		if next != nil {
			a["page"] = next
		}
		out, isErr := callTool(t, s, "list_agent_work_grants", a)
		if isErr {
			t.Fatalf("list: %v", out)
		}
		pages++
		if out["snapshot"] != false || out["page"] != float64(pages) {
			t.Fatalf("page %d: %v", pages, out)
		}
		for _, g := range out["grants"].([]any) {
			gm := obj(t, g)
			if obj(t, gm, "agent")["login"] != st.demo.Bot {
				t.Fatalf("someone else's grant: %v", gm)
			}
			got = append(got, int64(gm["id"].(float64)))
		}
		if out["has_more"] == false {
			if out["next_page"] != nil {
				t.Fatalf("last page has next_page: %v", out)
			}
			break
		}
		if next = out["next_page"]; next != float64(pages+1) {
			t.Fatalf("next_page = %v after page %d", next, pages)
		}
		if pages > 40 {
			t.Fatal("the listing does not end")
		}
	}
	reqs := st.emu.Requests()
	if len(reqs) != pages {
		t.Fatalf("%d requests for %d pages", len(reqs), pages)
	}
	for i, r := range reqs {
		if r.Method != "GET" || r.Path != "/api/v1/agent-work-grants" || r.Query.Get("limit") != "30" ||
			r.Query.Get("page") != fmt.Sprint(i+1) || r.Header.Get("Authorization") != "Bearer "+st.demo.BotToken {
			t.Fatalf("request %d: %s %s?%s auth=%v", i, r.Method, r.Path, r.RawQuery, r.Header.Get("Authorization") != "")
		}
	}
	return pages, got
}

// TestGrantSubmitReadback: confirm, human approval, submission of a whole
// body, the Issue read back with its body and actor, same-key replay, and
// the tombstone left by deleting the Issue.
func TestGrantSubmitReadback(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	task := "Triage <the> \"bugs\" & write it up — ünïcödé, 日本語, emoji 🚀\u2028end"
	g := prepare(t, st, d.PublicRepo, task)
	s := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)

	out, isErr := callTool(t, s, "get_agent_work_grant", ref(g))
	if isErr || out["native_status"] != float64(200) {
		t.Fatalf("get grant: %v", out)
	}
	grant := obj(t, out, "grant")
	if grant["state"] != "awaiting_agent" || obj(t, grant, "proposal")["task"] != task || obj(t, grant, "proposal")["digest"] != g.Digest {
		t.Fatalf("grant = %v", grant)
	}

	st.emu.ResetRequests()
	out, isErr = callTool(t, s, "confirm_agent_work_grant", withTriple(g))
	if isErr || out["native_status"] != float64(200) || obj(t, out, "grant")["state"] != "awaiting_human" {
		t.Fatalf("confirm: %v", out)
	}
	if n := st.emu.GrantPosts(); n != (forgejoemu.GrantPostCounts{Confirm: 1}) {
		t.Fatalf("confirm sent %+v", n)
	}
	// Confirmation is not approval: submitting now is Core's conflict.
	out, isErr = callTool(t, s, "submit_agent_work_proposal", submitArgs(g, newKey(t), "too early", "x"))
	wantRefusal(t, out, isErr, "conflict", 409)
	if err := st.emu.ApproveGrant(g.ID, d.Owner); err != nil {
		t.Fatal(err)
	}

	// A body of ~300 KiB of mixed text goes through whole.
	body := strings.Repeat("Line with <html> & \"quotes\", ünïcödé, 日本語, 🚀 and a tab\t.\n", 4000)
	title := "Bugs triaged: <3 & \"more\" 🚀"
	key := newKey(t)
	st.emu.ResetRequests()
	out, isErr = callTool(t, s, "submit_agent_work_proposal", submitArgs(g, key, title, body))
	if isErr || out["native_status"] != float64(201) {
		t.Fatalf("submit: %v", out)
	}
	if n := st.emu.GrantPosts(); n != (forgejoemu.GrantPostCounts{Submit: 1}) {
		t.Fatalf("submit sent %+v", n)
	}
	sent := st.emu.Requests()[0]
	var payload map[string]any
	if err := json.Unmarshal(sent.Body, &payload); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(payload)); !slices.Equal(got, []string{"body", "proposal_digest", "proposal_schema", "proposal_version", "request_key", "title"}) {
		t.Fatalf("sent members %v", got)
	}
	receipt := obj(t, out, "submission")
	issue := obj(t, receipt, "issue")
	if receipt["request_key"] != key || receipt["outcome"] != "submitted" || receipt["review_state"] != "awaiting_review" ||
		obj(t, receipt, "actor")["login"] != d.Bot || issue["id"].(float64) < 1 || issue["index"].(float64) < 1 {
		t.Fatalf("receipt = %v", receipt)
	}
	index := int64(issue["index"].(float64))

	// The Issue holds the whole body, by the bot: in Core, and through
	// Forgejo's own Issue API with the bot's token.
	is, err := st.emu.Issue(d.Owner, d.PublicRepo, index)
	if err != nil || is.Body != body || is.Title != title || is.Poster != d.Bot || is.ID != int64(issue["id"].(float64)) {
		t.Fatalf("issue in Core: %v (body equal %v) poster %s", err, is.Body == body, is.Poster)
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/repos/%s/%s/issues/%d", st.emu.URL(), d.Owner, d.PublicRepo, index), nil)
	req.Header.Set("Authorization", "token "+d.BotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var native struct {
		Body string `json:"body"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	err = json.NewDecoder(resp.Body).Decode(&native)
	resp.Body.Close()
	if err != nil || native.Body != body || native.User.Login != d.Bot {
		t.Fatalf("native issue readback: %v body equal %v user %q", err, native.Body == body, native.User.Login)
	}

	// Readback and same-key replay return the same receipt.
	out, isErr = callTool(t, s, "get_agent_work_submission", keyArgs(g, key))
	if isErr || out["native_status"] != float64(200) || mustJSON(t, out["submission"]) != mustJSON(t, receipt) {
		t.Fatalf("readback: %v", out)
	}
	st.emu.ResetRequests()
	out, isErr = callTool(t, s, "submit_agent_work_proposal", submitArgs(g, key, title, body))
	if isErr || out["native_status"] != float64(200) || mustJSON(t, out["submission"]) != mustJSON(t, receipt) {
		t.Fatalf("replay: %v", out)
	}
	if n := st.emu.GrantPosts(); n.Submit != 1 {
		t.Fatalf("replay sent %d POSTs", n.Submit)
	}
	// The same key with other content is Core's conflict, and no Issue.
	out, isErr = callTool(t, s, "submit_agent_work_proposal", submitArgs(g, key, title, body+"changed"))
	wantRefusal(t, out, isErr, "conflict", 409)
	if all, _ := st.emu.Issues(d.Owner, d.PublicRepo); len(all) != 1 {
		t.Fatalf("%d issues after replay and conflict, want 1", len(all))
	}

	// Deleting the Issue leaves a tombstone: the receipt keeps the historical
	// Issue and says issue_deleted, and the key creates nothing new.
	if err := st.emu.DeleteIssue(d.Owner, d.PublicRepo, index); err != nil {
		t.Fatal(err)
	}
	out, isErr = callTool(t, s, "get_agent_work_submission", keyArgs(g, key))
	if isErr || obj(t, out, "submission")["outcome"] != "issue_deleted" || mustJSON(t, obj(t, out, "submission", "issue")) != mustJSON(t, issue) {
		t.Fatalf("readback after deletion: %v", out)
	}
	out, isErr = callTool(t, s, "submit_agent_work_proposal", submitArgs(g, key, title, body))
	if isErr || out["native_status"] != float64(200) || obj(t, out, "submission")["outcome"] != "issue_deleted" {
		t.Fatalf("submit after deletion: %v", out)
	}
	if all, _ := st.emu.Issues(d.Owner, d.PublicRepo); len(all) != 0 {
		t.Fatalf("a deleted key created a new issue: %v", all)
	}

	// A rebound Issue: issue_binding_changed.
	key2 := newKey(t)
	out, _ = callTool(t, s, "submit_agent_work_proposal", submitArgs(g, key2, "second", ""))
	index2 := int64(obj(t, out, "submission", "issue")["index"].(float64))
	if index2 == index {
		t.Fatal("the deleted issue's index was reused")
	}
	if err := st.emu.RebindIssue(d.Owner, d.PublicRepo, index2); err != nil {
		t.Fatal(err)
	}
	out, isErr = callTool(t, s, "get_agent_work_submission", keyArgs(g, key2))
	if isErr || obj(t, out, "submission")["outcome"] != "issue_binding_changed" {
		t.Fatalf("rebound: %v", out)
	}
}

// TestGrantNativeRefusals: Core's refusals keep their meaning and status.
// The process has a credential of its own (stdio only), which must never
// stand in for an HTTP caller's bearer.
func TestGrantNativeRefusals(t *testing.T) {
	const processToken = "process-token-never-sent-for-http-callers"
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_FORGEJO_TOKEN": processToken})
	d := st.demo
	bot := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)

	t.Run("wrong bot", func(t *testing.T) {
		g := prepare(t, st, d.PublicRepo, "for review-bot")
		if err := st.emu.AddCollaborator(d.Owner, d.PublicRepo, "other-bot", "write"); err != nil {
			t.Fatal(err)
		}
		otherToken := st.emu.IssueToken("other-bot", "read:repository", "write:issue")
		other := st.gw.Connect(t, "/mcp/forgejo", otherToken)
		st.emu.ResetRequests()
		out, isErr := callTool(t, other, "confirm_agent_work_grant", withTriple(g))
		wantRefusal(t, out, isErr, "forbidden", 403)
		if got := st.emu.Requests()[0].Header.Get("Authorization"); got != "Bearer "+otherToken {
			t.Fatalf("Authorization sent for the caller: %q", got)
		}
		out, isErr = callTool(t, other, "get_agent_work_grant", ref(g))
		wantRefusal(t, out, isErr, "forbidden", 403)
		activate(t, st, bot, g)
		st.emu.ResetRequests()
		out, isErr = callTool(t, other, "submit_agent_work_proposal", submitArgs(g, newKey(t), "t", "b"))
		wantRefusal(t, out, isErr, "forbidden", 403)
		if n := st.emu.GrantPosts(); n.Submit != 1 {
			t.Fatalf("%d POSTs", n.Submit)
		}
	})

	t.Run("missing write:issue", func(t *testing.T) {
		g := prepare(t, st, d.PublicRepo, "scope")
		readOnly := st.gw.Connect(t, "/mcp/forgejo", st.emu.IssueToken(d.Bot, "read:repository"))
		out, isErr := callTool(t, readOnly, "get_agent_work_grant", ref(g))
		if isErr {
			t.Fatalf("read with read:repository: %v", out)
		}
		out, isErr = callTool(t, readOnly, "confirm_agent_work_grant", withTriple(g))
		wantRefusal(t, out, isErr, "forbidden", 403)
		activate(t, st, bot, g)
		out, isErr = callTool(t, readOnly, "submit_agent_work_proposal", submitArgs(g, newKey(t), "t", "b"))
		wantRefusal(t, out, isErr, "forbidden", 403)
	})

	t.Run("withdrawn grant", func(t *testing.T) {
		g := prepare(t, st, d.PublicRepo, "withdrawn")
		activate(t, st, bot, g)
		key := newKey(t)
		if out, isErr := callTool(t, bot, "submit_agent_work_proposal", submitArgs(g, key, "before", "b")); isErr {
			t.Fatalf("submit: %v", out)
		}
		if err := st.emu.WithdrawGrant(g.ID, d.Owner); err != nil {
			t.Fatal(err)
		}
		out, isErr := callTool(t, bot, "submit_agent_work_proposal", submitArgs(g, newKey(t), "after", "b"))
		wantRefusal(t, out, isErr, "conflict", 409)
		out, isErr = callTool(t, bot, "confirm_agent_work_grant", withTriple(g))
		wantRefusal(t, out, isErr, "conflict", 409)
		// The prior commit still reconciles.
		out, isErr = callTool(t, bot, "get_agent_work_submission", keyArgs(g, key))
		if isErr || obj(t, out, "grant")["state"] != "revoked" || obj(t, out, "submission")["outcome"] != "submitted" {
			t.Fatalf("readback after withdrawal: %v", out)
		}
	})

	t.Run("lost repository access", func(t *testing.T) {
		if err := st.emu.AddCollaborator(d.Owner, d.PrivateRepo, d.Bot, "write"); err != nil {
			t.Fatal(err)
		}
		g := prepare(t, st, d.PrivateRepo, "private work")
		activate(t, st, bot, g)
		key := newKey(t)
		if out, isErr := callTool(t, bot, "submit_agent_work_proposal", submitArgs(g, key, "t", "b")); isErr {
			t.Fatalf("submit: %v", out)
		}
		if err := st.emu.RemoveCollaborator(d.Owner, d.PrivateRepo, d.Bot); err != nil {
			t.Fatal(err)
		}
		out, isErr := callTool(t, bot, "get_agent_work_grant", ref(g))
		wantRefusal(t, out, isErr, "not_found", 404)
		out, isErr = callTool(t, bot, "submit_agent_work_proposal", submitArgs(g, newKey(t), "t", "b"))
		wantRefusal(t, out, isErr, "not_found", 404)
		out, isErr = callTool(t, bot, "get_agent_work_submission", keyArgs(g, key))
		wantRefusal(t, out, isErr, "not_found", 404)
		out, _ = callTool(t, bot, "list_agent_work_grants", map[string]any{"state": "all"})
		for _, it := range out["grants"].([]any) {
			if obj(t, it)["id"] == float64(g.ID) {
				t.Fatal("a grant of a repository the bot lost is still listed")
			}
		}
	})

	t.Run("stale digest", func(t *testing.T) {
		g := prepare(t, st, d.PublicRepo, "first text")
		if _, err := st.emu.ReviseGrant(g.ID, d.Owner, forgejoemu.GrantProposal{Task: "second text"}); err != nil {
			t.Fatal(err)
		}
		out, isErr := callTool(t, bot, "confirm_agent_work_grant", withTriple(g))
		wantRefusal(t, out, isErr, "conflict", 409)
	})

	t.Run("unknown grant and revoked token", func(t *testing.T) {
		out, isErr := callTool(t, bot, "get_agent_work_grant", map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "grant_id": 999999})
		wantRefusal(t, out, isErr, "not_found", 404)
		tok := st.emu.IssueToken(d.Bot, "read:repository", "write:issue")
		st.emu.RevokeToken(tok)
		revoked := st.gw.Connect(t, "/mcp/forgejo", tok)
		out, isErr = callTool(t, revoked, "list_agent_work_grants", nil)
		wantRefusal(t, out, isErr, "upstream_unauthorized", 401)
		if text := mustJSON(t, out); strings.Contains(text, "user does not exist") || strings.Contains(text, tok) {
			t.Fatalf("native text or the token leaked: %s", text)
		}
	})
}

// TestGrantDeliveryUncertain: a submission or confirmation whose answer
// cannot prove its outcome is delivery_uncertain, each tool call sent at
// most one POST, and a readback with the same key reconciles it.
func TestGrantDeliveryUncertain(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_FORGEJO_IO_TIMEOUT": "1s"})
	d := st.demo
	s := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)
	g := prepare(t, st, d.PublicRepo, "uncertain")
	activate(t, st, s, g)
	route := fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/%d/issues", d.Owner, d.PublicRepo, g.ID)
	mutateSubmission := func(member string, value any) func(any) any {
		return func(v any) any {
			sub := v.(map[string]any)["submission"].(map[string]any)
			if value == nil {
				delete(sub, member)
			} else {
				sub[member] = value
			}
			return v
		}
	}
	secret := "https://evil.example/steal?token=upstream-secret"
	cases := []struct {
		name      string
		grant     *forgejoemu.GrantFault // after the commit
		fault     *forgejoemu.Fault      // generic, before the route
		committed bool
		status    int // native_status the error carries, 0 for none
	}{
		{"connection dropped after commit", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultDrop}, nil, true, 0},
		{"stalled past the I/O timeout after commit", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultStall, Delay: 3 * time.Second}, nil, true, 0},
		{"unexpected 500 after commit", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultStatus, Status: 500}, nil, true, 500},
		{"unexpected 202 after commit", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultStatus, Status: 202}, nil, true, 202},
		{"422 is not a definite refusal", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultStatus, Status: 422}, nil, true, 422},
		{"malformed body", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMalformed}, nil, true, 201},
		{"other request key", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("request_key", "7c9e6679-7425-40de-944b-e07fc1f90ae7")}, nil, true, 201},
		{"review_state accepted", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("review_state", "accepted")}, nil, true, 201},
		{"unknown outcome", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("outcome", "merged")}, nil, true, 201},
		{"new submission not submitted", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("outcome", "issue_deleted")}, nil, true, 201},
		{"issue id zero", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("issue", map[string]any{"id": 0, "index": 1, "html_url": "x"})}, nil, true, 201},
		{"issue id a string", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("issue", map[string]any{"id": "5001", "index": 1, "html_url": "x"})}, nil, true, 201},
		{"actor not the agent", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("actor", map[string]any{"id": 1, "login": "demo"})}, nil, true, 201},
		{"missing issue", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: mutateSubmission("issue", nil)}, nil, true, 201},
		{"other repository", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: func(v any) any {
			v.(map[string]any)["grant"].(map[string]any)["repository"].(map[string]any)["id"] = 43
			return v
		}}, nil, true, 201},
		{"other grant", &forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Mutate: func(v any) any {
			v.(map[string]any)["grant"].(map[string]any)["id"] = g.ID + 1
			return v
		}}, nil, true, 201},
		{"redirect", nil, &forgejoemu.Fault{Kind: forgejoemu.FaultRedirect, Location: secret}, false, 302},
		{"unexpected 503 before the route", nil, &forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: 503, Body: []byte(secret)}, false, 503},
		{"html success", nil, &forgejoemu.Fault{Kind: forgejoemu.FaultHeaders, Header: http.Header{"Content-Type": {"text/html"}}}, true, 201},
		{"reset mid-body", nil, &forgejoemu.Fault{Kind: forgejoemu.FaultReset}, true, 201},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.grant != nil {
				c.grant.Times = 1
				st.emu.SetGrantFault(forgejoemu.GrantOpSubmit, *c.grant)
			}
			if c.fault != nil {
				f := *c.fault
				f.Times = 1
				st.emu.SetFault(route, f)
			}
			defer st.emu.ClearFaults()
			defer st.emu.ClearGrantFaults()
			key := newKey(t)
			before, _ := st.emu.Issues(d.Owner, d.PublicRepo)
			st.emu.ResetRequests()
			out, isErr := callTool(t, s, "submit_agent_work_proposal", submitArgs(g, key, "uncertain "+c.name, "body"))
			if !isErr {
				t.Fatalf("got a receipt: %v", out)
			}
			e := errorObj(t, out)
			msg, _ := e["message"].(string)
			if e["code"] != "delivery_uncertain" || !strings.Contains(msg, "get_agent_work_submission") ||
				!strings.Contains(msg, "same owner, repo, grant_id and request_key") || !strings.Contains(msg, "do not generate a new request_key") {
				t.Fatalf("error = %v", e)
			}
			if c.status != 0 && e["native_status"] != float64(c.status) || c.status == 0 && e["native_status"] != nil {
				t.Fatalf("native_status = %v, want %d", e["native_status"], c.status)
			}
			rb := obj(t, e, "readback")
			if rb["tool"] != "get_agent_work_submission" || obj(t, rb, "arguments")["request_key"] != key {
				t.Fatalf("readback guidance = %v", rb)
			}
			if text := mustJSON(t, out); strings.Contains(text, "evil.example") || strings.Contains(text, "upstream-secret") {
				t.Fatalf("upstream text leaked: %s", text)
			}
			if n := st.emu.GrantPosts(); n.Submit != 1 {
				t.Fatalf("the tool call sent %d POSTs", n.Submit)
			}
			for _, r := range st.emu.Requests() {
				if strings.Contains(r.Path, "redirected") || strings.Contains(r.Path, "steal") {
					t.Fatalf("a redirect was followed: %s", r.Path)
				}
			}
			after, _ := st.emu.Issues(d.Owner, d.PublicRepo)
			if committed := len(after) == len(before)+1; committed != c.committed {
				t.Fatalf("committed = %v, want %v", committed, c.committed)
			}
			// Reconcile with the same key.
			st.emu.ClearGrantFaults()
			st.emu.ClearFaults()
			out, isErr = callTool(t, s, "get_agent_work_submission", keyArgs(g, key))
			if c.committed {
				if isErr || obj(t, out, "submission")["request_key"] != key || obj(t, out, "submission")["outcome"] != "submitted" {
					t.Fatalf("readback: %v", out)
				}
			} else {
				wantRefusal(t, out, isErr, "not_found", 404)
			}
		})
	}

	t.Run("confirmation dropped after commit", func(t *testing.T) {
		g := prepare(t, st, d.PublicRepo, "confirm uncertain")
		st.emu.SetGrantFault(forgejoemu.GrantOpConfirm, forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultDrop, Times: 1})
		st.emu.ResetRequests()
		out, isErr := callTool(t, s, "confirm_agent_work_grant", withTriple(g))
		e := errorObj(t, out)
		if !isErr || e["code"] != "delivery_uncertain" || !strings.Contains(e["message"].(string), "get_agent_work_grant") ||
			obj(t, e, "readback")["tool"] != "get_agent_work_grant" {
			t.Fatalf("confirm: %v", out)
		}
		if n := st.emu.GrantPosts(); n.Confirm != 1 {
			t.Fatalf("%d confirm POSTs", n.Confirm)
		}
		out, isErr = callTool(t, s, "get_agent_work_grant", ref(g))
		if isErr || obj(t, out, "grant")["state"] != "awaiting_human" {
			t.Fatalf("grant after the lost confirmation: %v", out)
		}
	})

	t.Run("confirmation answered with the old state", func(t *testing.T) {
		g := prepare(t, st, d.PublicRepo, "confirm inconsistent")
		st.emu.SetGrantFault(forgejoemu.GrantOpConfirm, forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Times: 1, Mutate: func(v any) any {
			v.(map[string]any)["state"] = "awaiting_agent"
			return v
		}})
		out, isErr := callTool(t, s, "confirm_agent_work_grant", withTriple(g))
		if !isErr || errorCode(t, out) != "delivery_uncertain" {
			t.Fatalf("confirm: %v", out)
		}
	})
}

// TestGrantMalformedReads: a read whose success is inconsistent, incomplete
// or redirected publishes nothing.
func TestGrantMalformedReads(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	s := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)
	g := prepare(t, st, d.PublicRepo, "reads")
	set := func(path []string, value any) func(any) any {
		return func(v any) any {
			m := v.(map[string]any)
			for _, p := range path[:len(path)-1] {
				m = m[p].(map[string]any)
			}
			if value == nil {
				delete(m, path[len(path)-1])
			} else {
				m[path[len(path)-1]] = value
			}
			return v
		}
	}
	cases := []struct {
		name   string
		mutate func(any) any
	}{
		{"other grant id", set([]string{"id"}, g.ID+1)},
		{"other repository", set([]string{"repository", "name"}, "elsewhere")},
		{"agent id zero", set([]string{"agent", "id"}, 0)},
		{"unknown state", set([]string{"state"}, "approved")},
		{"float id", set([]string{"id"}, json.Number(fmt.Sprint(g.ID, ".0")))},
		{"proposal version 2", set([]string{"proposal", "version"}, 2)},
		{"upper-case digest", set([]string{"proposal", "digest"}, strings.ToUpper(g.Digest))},
		{"no proposal", set([]string{"proposal"}, nil)},
		{"no state_revision", set([]string{"state_revision"}, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st.emu.SetGrantFault(forgejoemu.GrantOpGet, forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Times: 1, Mutate: c.mutate})
			defer st.emu.ClearGrantFaults()
			out, isErr := callTool(t, s, "get_agent_work_grant", ref(g))
			if !isErr || errorCode(t, out) != "upstream_malformed" {
				t.Fatalf("got %v", out)
			}
		})
	}
	t.Run("list item in the wrong state", func(t *testing.T) {
		st.emu.SetGrantFault(forgejoemu.GrantOpList, forgejoemu.GrantFault{Kind: forgejoemu.GrantFaultMutate, Times: 1, Mutate: func(v any) any {
			v.([]any)[0].(map[string]any)["state"] = "revoked"
			return v
		}})
		out, isErr := callTool(t, s, "list_agent_work_grants", nil)
		if !isErr || errorCode(t, out) != "upstream_malformed" {
			t.Fatalf("got %v", out)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		st.emu.SetFault("/api/v1/agent-work-grants", forgejoemu.Fault{Kind: forgejoemu.FaultRedirect, Times: 1})
		defer st.emu.ClearFaults()
		out, isErr := callTool(t, s, "list_agent_work_grants", nil)
		if !isErr || errorCode(t, out) != "redirect_refused" {
			t.Fatalf("got %v", out)
		}
	})
}

// TestGrantInputRefusals: every malformed input is refused before any
// upstream request; the emulator sees nothing.
func TestGrantInputRefusals(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	s := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)
	g := forgejoemu.Grant{ID: 7001, Owner: d.Owner, Repo: d.PublicRepo, Digest: strings.Repeat("ab", 32)}
	good := submitArgs(g, "0f8fad5b-d9cb-469f-a165-70867728950e", "title", "body")
	// Sanity: the good arguments do reach Core (which answers 404: no grant).
	st.emu.ResetRequests()
	if out, isErr := callTool(t, s, "submit_agent_work_proposal", good); !isErr || errorCode(t, out) != "not_found" {
		t.Fatalf("good arguments: %v", out)
	}
	if n := len(st.emu.Requests()); n != 1 {
		t.Fatalf("good arguments made %d requests", n)
	}

	cases := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"string grant_id", "submit_agent_work_proposal", with(good, "grant_id", "7001")},
		{"float grant_id", "submit_agent_work_proposal", with(good, "grant_id", 7001.5)},
		{"float-valued grant_id", "submit_agent_work_proposal", with(good, "grant_id", json.RawMessage("7001.0"))},
		{"exponent grant_id", "submit_agent_work_proposal", with(good, "grant_id", json.RawMessage("7e3"))},
		{"boolean grant_id", "get_agent_work_grant", with(ref(g), "grant_id", true)},
		{"negative grant_id", "get_agent_work_grant", with(ref(g), "grant_id", -1)},
		{"zero grant_id", "confirm_agent_work_grant", with(withTriple(g), "grant_id", 0)},
		{"over-int64 grant_id", "get_agent_work_submission", with(keyArgs(g, "0f8fad5b-d9cb-469f-a165-70867728950e"), "grant_id", json.RawMessage("9223372036854775808"))},
		{"null grant_id", "get_agent_work_grant", with(ref(g), "grant_id", json.RawMessage("null"))},
		{"missing grant_id", "get_agent_work_grant", with(ref(g), "grant_id", nil)},
		{"string page", "list_agent_work_grants", map[string]any{"page": "2"}},
		{"zero page", "list_agent_work_grants", map[string]any{"page": 0}},
		{"unknown state", "list_agent_work_grants", map[string]any{"state": "pending"}},
		{"other schema", "submit_agent_work_proposal", with(good, "proposal_schema", "agent_work_grant.v2")},
		{"schema in other case", "submit_agent_work_proposal", with(good, "proposal_schema", "Agent_Work_Grant.V1")},
		{"version 2", "submit_agent_work_proposal", with(good, "proposal_version", 2)},
		{"version as string", "confirm_agent_work_grant", with(withTriple(g), "proposal_version", "1")},
		{"version as float", "confirm_agent_work_grant", with(withTriple(g), "proposal_version", json.RawMessage("1.0"))},
		{"version 0", "confirm_agent_work_grant", with(withTriple(g), "proposal_version", 0)},
		{"upper-case digest", "submit_agent_work_proposal", with(good, "proposal_digest", strings.ToUpper(g.Digest))},
		{"short digest", "confirm_agent_work_grant", with(withTriple(g), "proposal_digest", g.Digest[:63])},
		{"missing digest", "confirm_agent_work_grant", with(withTriple(g), "proposal_digest", nil)},
		{"upper-case request key", "submit_agent_work_proposal", with(good, "request_key", "0F8FAD5B-D9CB-469F-A165-70867728950E")},
		{"UUIDv1 request key", "submit_agent_work_proposal", with(good, "request_key", "0f8fad5b-d9cb-169f-a165-70867728950e")},
		{"wrong variant request key", "submit_agent_work_proposal", with(good, "request_key", "0f8fad5b-d9cb-469f-c165-70867728950e")},
		{"request key without hyphens", "submit_agent_work_proposal", with(good, "request_key", "0f8fad5bd9cb469fa16570867728950e")},
		{"braced request key", "get_agent_work_submission", with(keyArgs(g, ""), "request_key", "{0f8fad5b-d9cb-469f-a165-70867728950e}")},
		{"request key with a slash", "get_agent_work_submission", with(keyArgs(g, ""), "request_key", "0f8fad5b-d9cb-469f-a165-70867728950e/../x")},
		{"missing request key", "submit_agent_work_proposal", with(good, "request_key", nil)},
		{"missing title", "submit_agent_work_proposal", with(good, "title", nil)},
		{"numeric body", "submit_agent_work_proposal", with(good, "body", 5)},
		{"lone surrogate in body", "submit_agent_work_proposal", with(good, "body", json.RawMessage(`"a\ud800b"`))},
		{"human authorization", "submit_agent_work_proposal", with(good, "human_approval", true)},
		{"claimed approver", "confirm_agent_work_grant", with(withTriple(g), "approved_by", "demo")},
		{"issuer", "submit_agent_work_proposal", with(good, "issuer_id", 1)},
		{"caller-defined agent", "submit_agent_work_proposal", with(good, "agent_id", 3)},
		{"sponsorship", "submit_agent_work_proposal", with(good, "sponsor", "acme")},
		{"scope change", "confirm_agent_work_grant", with(withTriple(g), "scopes", []string{"write:repository"})},
		{"state_revision", "confirm_agent_work_grant", with(withTriple(g), "state_revision", 3)},
		{"bad owner", "get_agent_work_grant", with(ref(g), "owner", "demo/../x")},
		{"dot-dot repo", "get_agent_work_grant", with(ref(g), "repo", "..")},
	}
	st.emu.ResetRequests()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, isErr := callTool(t, s, c.tool, c.args)
			if !isErr || errorCode(t, out) != "invalid_arguments" {
				t.Fatalf("got %v, want invalid_arguments", out)
			}
		})
	}

	t.Run("invalid UTF-8", func(t *testing.T) {
		args := strings.Replace(mustJSON(t, good), `"title":"title"`, "\"title\":\"ti\xfftle\"", 1)
		if !strings.Contains(args, "\xff") {
			t.Fatal("test arguments lack the invalid byte")
		}
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"submit_agent_work_proposal","arguments":` + args + `}}`
		resp, text := postRPC(t, st.gw.URL+"/mcp/forgejo", body, map[string]string{"Authorization": "Bearer " + d.BotToken})
		if resp.StatusCode != 200 || !strings.Contains(text, `"isError":true`) || !strings.Contains(text, `\"code\":\"invalid_arguments\"`) {
			t.Fatalf("invalid UTF-8: %d %s", resp.StatusCode, text)
		}
	})
	t.Run("no bearer", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_agent_work_grant","arguments":` + mustJSON(t, ref(g)) + `}}`
		resp, text := postRPC(t, st.gw.URL+"/mcp/forgejo", body, nil)
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Fatalf("anonymous call: %d %s", resp.StatusCode, text)
		}
	})
	if n := len(st.emu.Requests()); n != 0 {
		t.Fatalf("refused calls reached the emulator %d times", n)
	}
}

// TestGrantStdio: over stdio the grant tools use the process's own token
// or Basic credentials, and are not offered without one.
func TestGrantStdio(t *testing.T) {
	emu, d := startDemoEmulator(t)
	if err := emu.SetPassword(d.Bot, "bot-password"); err != nil {
		t.Fatal(err)
	}
	g, err := emu.PrepareGrant(d.Owner, d.PublicRepo, d.Bot, d.Owner, forgejoemu.GrantProposal{Task: "stdio"})
	if err != nil {
		t.Fatal(err)
	}
	origin := "AGENT_GATEWAY_FORGEJO_ORIGIN=" + emu.URL()
	if got := toolNames(t, stdioSession(t, origin)); !slices.Equal(got, anonymousTools) {
		t.Fatalf("stdio without a credential lists %v", got)
	}
	for _, c := range []struct {
		name string
		env  []string
		auth string
	}{
		{"token", []string{"AGENT_GATEWAY_FORGEJO_TOKEN=" + d.BotToken}, "Bearer " + d.BotToken},
		{"basic", []string{"AGENT_GATEWAY_FORGEJO_USERNAME=" + d.Bot, "AGENT_GATEWAY_FORGEJO_PASSWORD=bot-password"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := stdioSession(t, append([]string{origin}, c.env...)...)
			emu.ResetRequests()
			out, isErr := callTool(t, s, "get_agent_work_grant", ref(g))
			if isErr || obj(t, out, "grant")["id"] != float64(g.ID) {
				t.Fatalf("get over stdio: %v", out)
			}
			got := emu.Requests()[0].Header.Get("Authorization")
			if c.auth != "" && got != c.auth || c.auth == "" && !strings.HasPrefix(got, "Basic ") {
				t.Fatalf("Authorization sent: %q", got)
			}
		})
	}
}
