package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/test/mcpdiff"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// diffStack is one gateway, in front of the Core and GitHub emulators,
// served twice over real loopback HTTP: with the owned tools/call path
// (mcp.owned_tool_calls, the default) and through the SDK only.
type diffStack struct {
	owned, sdk *httptest.Server
	forgejo    *forgejoemu.Emulator
	github     *githubemu.Emulator
	demo       *forgejoemu.Demo
	docs       *githubemu.Docs
	// token holds every scope of the documents endpoint; narrow only
	// documents:read.
	token, narrow string
	sources       map[string]string       // document path → source id
	log           *gatewaytest.SyncBuffer // the gateway's log: access lines say served_by
}

func newDiffStack(t *testing.T) *diffStack {
	t.Helper()
	s := &diffStack{sources: map[string]string{}, log: &gatewaytest.SyncBuffer{}}
	var err error
	// A stopped clock: the emulator's evidence carries its times, which
	// must not move between the two calls of a pair.
	stopped := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if s.forgejo, err = forgejoemu.Start(forgejoemu.Options{Dir: t.TempDir(), Now: func() time.Time { return stopped }}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.forgejo.Close() })
	if s.demo, err = s.forgejo.SeedDemo(); err != nil {
		t.Fatal(err)
	}
	// A repository whose description holds what HTML escaping changes.
	if _, err := s.forgejo.CreateRepo(s.demo.Owner, "escapes", forgejoemu.RepoOptions{Description: "<script>alert('&')</script> — ü 😀 \u2028"}); err != nil {
		t.Fatal(err)
	}
	var keyFile string
	s.github, keyFile = startAppEmulator(t)
	if s.docs, err = s.github.SeedDocs("demo", "handbook", 77); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.DataDir = t.TempDir()
	cfg.ReadPerMinute = 1 << 20
	cfg.ForgejoOrigin, _ = upstream.ParseOrigin(s.forgejo.URL())
	cfg.GitHubAPIOrigin, _ = upstream.ParseOrigin(s.github.URL())
	cfg.GitHubAppID, cfg.GitHubAppKeyFile = 1001, keyFile
	cfg.PublicURL = "http://127.0.0.1:8080"
	ctx := context.Background()
	g, err := New(ctx, cfg, slog.New(slog.NewJSONHandler(s.log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	s.seedDocuments(t, g)
	serve := func(h http.Handler) *httptest.Server {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	if !g.cfg.OwnedToolCalls {
		t.Fatal("mcp.owned_tool_calls is off by default")
	}
	s.owned = serve(g.Handler())
	// The same gateway (store, cursors, upstream clients) with the owned
	// path off; a fresh registry, as the router registers its metrics.
	g.cfg.OwnedToolCalls = false
	g.registry = prometheus.NewRegistry()
	s.sdk = serve(g.Handler())
	return s
}

// seedDocuments makes a project whose sources are every interesting
// document of the GitHub emulator, and two bearers of its consents.
func (s *diffStack) seedDocuments(t *testing.T, g *Gateway) {
	t.Helper()
	ctx := context.Background()
	p, err := g.store.CreateProject(ctx, "", "diff")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.store.AddMember(ctx, p.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	repo, err := g.store.LinkRepository(ctx, p.ID, s.docs.Owner, s.docs.Repo, s.docs.InstallationID)
	if err != nil {
		t.Fatal(err)
	}
	d := s.docs
	for i, path := range []string{d.Runtime, d.Readme, d.Odd, d.Escapes, d.Empty, d.LinkToFile, d.LinkOutside, d.Submodule,
		d.NotUTF8, d.MaxSize, d.TooLarge, d.MissingUnicode, d.Dir} {
		role := store.RoleRuntime
		if i > 0 {
			role = "reference"
		}
		src, err := g.store.AddDocumentSource(ctx, store.NewDocumentSource{ProjectID: p.ID, RepositoryID: repo.ID,
			Role: role, Path: path, CommitSHA: d.Commit})
		if err != nil {
			t.Fatalf("source %s: %v", path, err)
		}
		s.sources[path] = src.ID
	}
	issue := func(scopes ...string) string {
		consent, err := g.store.CreateConsent(ctx, p.ID, "alice", "diff", scopes)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := g.store.IssueAccessToken(ctx, consent.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok.Secret
	}
	s.token = issue(g.documentsC.ScopeNames()...)
	s.narrow = issue("documents:read")
}

// gatewayCase is one request of the gateway corpus.
type gatewayCase struct {
	name     string
	endpoint string // "/mcp/forgejo" or "/mcp/documents"
	bearer   string
	body     string
	headers  map[string]string
	// sdkOnly: a tool result the owned path must leave to the SDK.
	sdkOnly bool
	// fault, when set, is switched on for the call on each path and off
	// after it.
	fault func(on bool)
}

func toolCall(tool, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func (s *diffStack) corpus(t *testing.T) []gatewayCase {
	d, f := s.demo, "/mcp/forgejo"
	repo := fmt.Sprintf(`"owner":%q,"repo":%q`, d.Owner, d.PublicRepo)
	private := fmt.Sprintf(`"owner":%q,"repo":%q`, d.Owner, d.PrivateRepo)
	cases := []gatewayCase{
		{"search_repositories", f, "", toolCall("search_repositories", `{"q":"gate"}`), nil, false, nil},
		{"search_repositories page 2", f, "", toolCall("search_repositories", `{"q":"","page":2}`), nil, false, nil},
		{"search_repositories HTML and non-ASCII query", f, "", toolCall("search_repositories", `{"q":"<b>&amp;ü😀"}`), nil, false, nil},
		{"get_repository", f, "", toolCall("get_repository", "{"+repo+"}"), nil, false, nil},
		{"get_repository HTML-escapable description", f, "", toolCall("get_repository", fmt.Sprintf(`{"owner":%q,"repo":"escapes"}`, d.Owner)), nil, false, nil},
		{"get_repository private, anonymous", f, "", toolCall("get_repository", "{"+private+"}"), nil, false, nil},
		{"get_repository missing", f, "", toolCall("get_repository", `{"owner":"nobody","repo":"nothing"}`), nil, false, nil},
		{"get_repository invalid owner", f, "", toolCall("get_repository", `{"owner":"a/b<&>","repo":"x"}`), nil, false, nil},
		{"get_repository unknown argument", f, "", toolCall("get_repository", "{"+repo+`,"x":1}`), nil, false, nil},
		{"list_pull_requests", f, "", toolCall("list_pull_requests", "{"+repo+"}"), nil, false, nil},
		{"list_pull_requests closed", f, "", toolCall("list_pull_requests", "{"+repo+`,"state":"closed"}`), nil, false, nil},
		{"list_pull_requests bad state", f, "", toolCall("list_pull_requests", "{"+repo+`,"state":"merged"}`), nil, false, nil},
		{"get_pull_request open", f, "", toolCall("get_pull_request", fmt.Sprintf(`{%s,"index":%d}`, repo, d.OpenPull)), nil, false, nil},
		{"get_pull_request closed", f, "", toolCall("get_pull_request", fmt.Sprintf(`{%s,"index":%d}`, repo, d.ClosedPull)), nil, false, nil},
		{"get_pull_request index 0", f, "", toolCall("get_pull_request", "{"+repo+`,"index":0}`), nil, false, nil},
		{"get_pull_request_diff", f, d.ReaderToken, toolCall("get_pull_request_diff", fmt.Sprintf(`{%s,"index":%d}`, repo, d.OpenPull)), nil, false, nil},
		{"get_pull_request_diff empty", f, d.ReaderToken, toolCall("get_pull_request_diff", fmt.Sprintf(`{%s,"index":%d}`, repo, d.EmptyPull)), nil, false, nil},
		{"get_pull_request_diff bad cursor", f, d.ReaderToken, toolCall("get_pull_request_diff", fmt.Sprintf(`{%s,"index":%d,"cursor":"x"}`, repo, d.OpenPull)), nil, false, nil},
		{"get_pull_request_diff anonymous: 401", f, "", toolCall("get_pull_request_diff", fmt.Sprintf(`{%s,"index":%d}`, repo, d.OpenPull)), nil, false, nil},
		{"get_pull_request_diff bad token", f, "nope", toolCall("get_pull_request_diff", fmt.Sprintf(`{%s,"index":%d}`, repo, d.OpenPull)), nil, false, nil},
		{"list_agent_work_grants", f, d.ReaderToken, toolCall("list_agent_work_grants", "{"+repo+"}"), nil, false, nil},
		{"get_agent_work_grant missing", f, d.ReaderToken, toolCall("get_agent_work_grant", "{"+repo+`,"grant_id":"nope"}`), nil, false, nil},
		{"get_agent_work_submission missing", f, d.ReaderToken, toolCall("get_agent_work_submission", "{"+repo+`,"submission_id":"nope"}`), nil, false, nil},
		// The writing tools only with refused arguments: a written call
		// answers with a new id on each path.
		{"confirm_agent_work_grant refused", f, d.ReaderToken, toolCall("confirm_agent_work_grant", `{}`), nil, false, nil},
		{"submit_agent_work_proposal refused", f, d.ReaderToken, toolCall("submit_agent_work_proposal", `{"owner":5}`), nil, false, nil},
		{"upstream 500", f, "", toolCall("get_repository", "{"+repo+"}"), nil, false, func(on bool) { s.forgejoFault(on, forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: 500}) }},
		{"upstream 503", f, "", toolCall("list_pull_requests", "{"+repo+"}"), nil, false, func(on bool) { s.forgejoFault(on, forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: 503}) }},
		{"upstream redirect", f, "", toolCall("get_repository", "{"+repo+"}"), nil, false, func(on bool) {
			s.forgejoFault(on, forgejoemu.Fault{Kind: forgejoemu.FaultRedirect, Location: "http://127.0.0.1:1/x"})
		}},
		{"upstream gzip", f, "", toolCall("get_repository", "{"+repo+"}"), nil, false, func(on bool) { s.forgejoFault(on, forgejoemu.Fault{Kind: forgejoemu.FaultGzip}) }},

		// Refusals of the middleware in front of both paths.
		{"tools/list", f, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, false, nil},
		{"unknown tool", f, "", toolCall("nope", `{}`), nil, false, nil},
		{"batch", f, "", "[" + toolCall("get_repository", "{"+repo+"}") + "]", nil, false, nil},
		{"body over 1 MiB", f, "", toolCall("get_repository", "{"+repo+"}") + strings.Repeat(" ", 1<<20), nil, false, nil},
		{"foreign origin", f, "", toolCall("get_repository", "{"+repo+"}"), map[string]string{"Origin": "https://evil.example"}, false, nil},
		{"own origin", f, "", toolCall("get_repository", "{"+repo+"}"), map[string]string{"Origin": "http://127.0.0.1:8080"}, false, nil},
		{"id the gateway cannot echo", f, "", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"get_repository","arguments":{` + repo + `}}}`, nil, false, nil},
		{"non-loopback Host", f, "", toolCall("get_repository", "{"+repo+"}"), map[string]string{"Host": "evil.example"}, false, nil},
		{"2026-07-28", f, "", toolCall("get_repository", "{"+repo+"}"), map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, true, nil},
		{"no protocol version", f, "", toolCall("get_repository", "{"+repo+"}"), map[string]string{"Mcp-Protocol-Version": ""}, false, nil},

		{"documents without a bearer: 401", "/mcp/documents", "", toolCall("runtime_bootstrap_get", `{}`), nil, false, nil},
		{"documents, unknown bearer", "/mcp/documents", "agw_nope", toolCall("runtime_bootstrap_get", `{}`), nil, false, nil},
		{"runtime_bootstrap_get", "/mcp/documents", s.token, toolCall("runtime_bootstrap_get", `{}`), nil, false, nil},
		{"catalog_profiles_list", "/mcp/documents", s.token, toolCall("catalog_profiles_list", `{}`), nil, false, nil},
		{"catalog_profiles_list without its scope: 403", "/mcp/documents", s.narrow, toolCall("catalog_profiles_list", `{}`), nil, false, nil},
		{"catalog_profile_get missing", "/mcp/documents", s.token, toolCall("catalog_profile_get", `{"profile_id":"prf_nope"}`), nil, false, nil},
		{"workflow_get missing", "/mcp/documents", s.token, toolCall("workflow_get", `{"workflow_id":"wf_nope"}`), nil, false, nil},
		{"workflow_dispatch refused", "/mcp/documents", s.token, toolCall("workflow_dispatch", `{}`), nil, false, nil},
		{"git_document_get invalid source", "/mcp/documents", s.token, toolCall("git_document_get", `{"source_id":"nope"}`), nil, false, nil},
		{"git_document_get unknown source", "/mcp/documents", s.token, toolCall("git_document_get", `{"source_id":"src_nope"}`), nil, false, nil},
		{"git_document_get bad cursor", "/mcp/documents", s.token, toolCall("git_document_get", `{"source_id":"`+s.sources[s.docs.Runtime]+`","cursor":"x"}`), nil, false, nil},
		{"git_document_get upstream 502", "/mcp/documents", s.token, toolCall("git_document_get", `{"source_id":"`+s.sources[s.docs.Readme]+`"}`), nil, false, func(on bool) {
			s.githubFault(on, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 502})
		}},
	}
	for path, id := range s.sources {
		cases = append(cases, gatewayCase{"git_document_get " + path, "/mcp/documents", s.token, toolCall("git_document_get", `{"source_id":"`+id+`"}`), nil, false, nil})
	}
	// The second fragment of the 200 KiB document, by the first one's cursor.
	first := s.call(t, s.owned.URL+"/mcp/documents", s.token, toolCall("git_document_get", `{"source_id":"`+s.sources[s.docs.Runtime]+`","max_bytes":1000}`))
	if cursor := nextCursor(t, first); cursor != "" {
		cases = append(cases, gatewayCase{"git_document_get by cursor", "/mcp/documents", s.token,
			toolCall("git_document_get", `{"source_id":"`+s.sources[s.docs.Runtime]+`","cursor":"`+cursor+`"}`), nil, false, nil})
	} else {
		t.Error("the first fragment has no next_cursor")
	}
	return cases
}

func (s *diffStack) forgejoFault(on bool, f forgejoemu.Fault) {
	if !on {
		f = forgejoemu.Fault{}
	}
	s.forgejo.SetFault("/api/v1/repos/", f)
}

func (s *diffStack) githubFault(on bool, f githubemu.Fault) {
	if on {
		s.github.SetFault(githubemu.RouteContents, f)
	} else {
		s.github.ClearFaults()
	}
}

// call posts body and returns the response body.
func (s *diffStack) call(t *testing.T, url, bearer, body string) []byte {
	t.Helper()
	return s.do(t, gatewayCase{body: body, bearer: bearer}, url).Body
}

// nextCursor is the next_cursor of a tool answer's JSON text.
func nextCursor(t *testing.T, answer []byte) string {
	t.Helper()
	return fragmentOf(t, answer).NextCursor
}

// fragmentOf reads a tool answer's JSON text as a git_document_get
// fragment.
func fragmentOf(t *testing.T, answer []byte) (page struct {
	Content    string `json:"content"`
	NextCursor string `json:"next_cursor"`
}) {
	t.Helper()
	var rpc struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal(answer, &rpc) != nil || len(rpc.Result.Content) != 1 || json.Unmarshal([]byte(rpc.Result.Content[0].Text), &page) != nil {
		t.Fatalf("not a tool answer: %.300s", answer)
	}
	return page
}

func (s *diffStack) do(t *testing.T, c gatewayCase, url string) mcpdiff.Answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	for k, v := range c.headers {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	a, err := mcpdiff.Do(http.DefaultClient, req)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOwnedPathMatchesSDK is the owned tools/call path's contract at the
// whole gateway: every tool's calls (valid ones, refused arguments,
// upstream failures, non-ASCII and HTML-escapable text, a 1 MiB
// document, a fragment of every character JSON escapes, whose text the
// owned path escapes twice in one pass) and the middleware's refusals go
// through the router with the owned path on and with it off, and status,
// the headers a client reads and the body bytes must be the same. A document cursor carries its
// expiry in whole seconds, so a pair that straddles a second boundary is
// sent again (only then).
func TestOwnedPathMatchesSDK(t *testing.T) {
	s := newDiffStack(t)
	escaped, nonASCII, everyEscape := false, false, false
	for _, c := range s.corpus(t) {
		t.Run(c.name, func(t *testing.T) {
			var diff string
			for range 3 {
				before := time.Now().Unix()
				owned, sdk := s.pair(t, c)
				diff = mcpdiff.Differs(owned, sdk)
				if diff == "" {
					escaped = escaped || bytes.Contains(owned.Body, []byte(`\u003c`))
					nonASCII = nonASCII || bytes.ContainsRune(owned.Body, 'ü')
					if c.name == "git_document_get "+s.docs.Escapes {
						// Every escape, twice over, in a fragment that
						// reads back as the document.
						everyEscape = fragmentOf(t, owned.Body).Content == githubemu.EscapesDocument
					}
					return
				}
				if time.Now().Unix() == before {
					break
				}
			}
			t.Error(diff)
		})
	}
	if !escaped || !nonASCII || !everyEscape {
		t.Errorf("the corpus lacks an answer with HTML-escaped text (%v), non-ASCII text (%v) or a fragment of every escape (%v)", escaped, nonASCII, everyEscape)
	}
}

func (s *diffStack) pair(t *testing.T, c gatewayCase) (owned, sdk mcpdiff.Answer) {
	t.Helper()
	for i, url := range []string{s.owned.URL, s.sdk.URL} {
		if c.fault != nil {
			c.fault(true)
		}
		logged := s.log.Len()
		a := s.do(t, c, url+c.endpoint)
		// Whether the owned path answered: every tool result but the
		// SDK-only cases on the owned side, never on the other.
		want := i == 0 && !c.sdkOnly && bytes.Contains(a.Body, []byte(`"result":{"content"`))
		if got := strings.Contains(s.log.String()[logged:], `"served_by":"gateway"`); got != want {
			t.Errorf("served by the owned path: %v, want %v (%s)", got, want, []string{"owned", "SDK"}[i])
		}
		if c.fault != nil {
			c.fault(false)
		}
		if i == 0 {
			owned = a
		} else {
			sdk = a
		}
	}
	return owned, sdk
}
