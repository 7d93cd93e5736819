package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/test/hostile"
)

// The hostile-upstream tests through the real binary: the emulators' fault
// switches for byte-level misbehaviour (more bytes than Content-Length,
// endless headers, a thousand Via headers, absurd nesting, huge numbers,
// NUL) against every toolset. The unit tests beside each client
// (upstream/forgejo and upstream/github TestHostileUpstream) prove the
// codes and the absence of leaked goroutines for every client path; these
// prove the same codes reach an MCP client, and that nothing the upstream
// sent (or any canary) reaches the gateway's logs, results or metrics.

func thousandVia() http.Header {
	via := make([]string, 1000)
	for i := range via {
		via[i] = "1.1 proxy-" + strconv.Itoa(i) + ".example"
	}
	return http.Header{"Via": via}
}

// jsonFault answers 200 with body as JSON.
func jsonFault(body string) forgejoemu.Fault {
	return forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: 200, Body: []byte(body),
		Header: http.Header{"Content-Type": {"application/json;charset=utf-8"}}}
}

// TestHostileForgejoUpstream: the Forgejo toolset's anonymous reads, diff
// evidence and grant reads against an emulated Core that misbehaves at the
// byte level.
func TestHostileForgejoUpstream(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_FORGEJO_IO_TIMEOUT": "1s"})
	d := st.demo
	surplus := gatewaytest.NewCanaryToken("surplus-bytes")
	st.canaries.Add("bytes an upstream sent past Content-Length", surplus)
	if _, err := st.emu.PrepareGrant(d.Owner, d.PublicRepo, d.Bot, d.Owner, forgejoemu.GrantProposal{Task: "t", Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	anon := st.gw.Connect(t, "/mcp/forgejo", "")
	reader := st.gw.Connect(t, "/mcp/forgejo", d.ReaderToken)
	bot := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)
	repoRoute := "/api/v1/repos/" + d.Owner + "/" + d.PublicRepo
	diffRoute := fmt.Sprintf("%s/pulls/%d.diff", repoRoute, d.OpenPull)
	repoArgs := map[string]any{"owner": d.Owner, "repo": d.PublicRepo}
	diffArgs := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull}
	extra := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{\"id\":1,\"name\":\"" + surplus + "\"}"
	cases := []struct {
		name    string
		route   string
		fault   forgejoemu.Fault
		session *mcp.ClientSession
		tool    string
		args    map[string]any
		code    string // "" means a result
	}{
		{"read: more bytes than Content-Length", repoRoute, forgejoemu.Fault{Kind: forgejoemu.FaultExtraBytes, Body: []byte(extra)}, anon, "get_repository", repoArgs, ""},
		{"read: endless headers", repoRoute, forgejoemu.Fault{Kind: forgejoemu.FaultEndlessHeaders}, anon, "get_repository", repoArgs, "upstream_malformed"},
		{"read: 1,000 Via headers", repoRoute, forgejoemu.Fault{Kind: forgejoemu.FaultHeaders, Header: thousandVia()}, anon, "get_repository", repoArgs, ""},
		{"read: nesting over 32 levels", repoRoute, jsonFault(`{"id":1,"name":"x","extra":` + hostile.Nested("1", 40) + `}`), anon, "get_repository", repoArgs, "upstream_malformed"},
		{"read: nesting of 100,000 levels", repoRoute, jsonFault(`{"id":1,"extra":` + hostile.Nested("1", 100000) + `}`), anon, "get_repository", repoArgs, "upstream_malformed"},
		{"read: huge number", repoRoute, jsonFault(`{"id":1` + strings.Repeat("0", 400) + `,"name":"x"}`), anon, "get_repository", repoArgs, "upstream_malformed"},
		{"read: raw NUL in a string", repoRoute, jsonFault("{\"id\":1,\"name\":\"a\x00b\"}"), anon, "get_repository", repoArgs, "upstream_malformed"},
		{"read: repeated member", repoRoute, jsonFault(`{"id":1,"name":"x","NAME":"y"}`), anon, "get_repository", repoArgs, "upstream_malformed"},
		{"diff: more bytes than Content-Length", diffRoute, forgejoemu.Fault{Kind: forgejoemu.FaultExtraBytes, Body: []byte(extra)}, reader, "get_pull_request_diff", diffArgs, ""},
		{"diff: endless headers", diffRoute, forgejoemu.Fault{Kind: forgejoemu.FaultEndlessHeaders}, reader, "get_pull_request_diff", diffArgs, "evidence_framing"},
		{"diff: 1,000 Via headers", diffRoute, forgejoemu.Fault{Kind: forgejoemu.FaultHeaders, Header: thousandVia()}, reader, "get_pull_request_diff", diffArgs, ""},
		{"grants: more bytes than Content-Length", "/api/v1/agent-work-grants", forgejoemu.Fault{Kind: forgejoemu.FaultExtraBytes, Body: []byte(extra)}, bot, "list_agent_work_grants", nil, ""},
		{"grants: endless headers", "/api/v1/agent-work-grants", forgejoemu.Fault{Kind: forgejoemu.FaultEndlessHeaders}, bot, "list_agent_work_grants", nil, "upstream_malformed"},
		{"grants: nesting over 32 levels", "/api/v1/agent-work-grants", jsonFault(hostile.Nested("[]", 40)), bot, "list_agent_work_grants", nil, "upstream_malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st.emu.SetFault(c.route, c.fault)
			defer st.emu.ClearFaults()
			out, isErr := callTool(t, c.session, c.tool, c.args)
			switch {
			case c.code == "" && isErr:
				t.Fatalf("want a result, got %v", out)
			case c.code != "" && (!isErr || errorCode(t, out) != c.code):
				t.Fatalf("got %v, want %s", out, c.code)
			}
			if text := mustJSON(t, out); strings.Contains(text, surplus) || strings.Contains(text, "proxy-") || strings.Contains(text, "X-Padding") {
				t.Fatalf("upstream bytes reached the result: %.300s", text)
			}
		})
	}
	// Still healthy, and the surplus is nowhere in the log (the canary scan
	// at the end checks logs, responses and metrics again).
	if out, isErr := callTool(t, anon, "get_repository", repoArgs); isErr {
		t.Fatalf("after the faults: %v", out)
	}
	time.Sleep(300 * time.Millisecond) // let the transport notice the last surplus
	if logs := st.gw.Logs(); strings.Contains(logs, surplus) || strings.Contains(logs, "Unsolicited response") {
		t.Fatalf("the surplus reached the gateway's log:\n%s", logs)
	}
}

// TestHostileGitHubUpstream: the documents toolset against an emulated
// GitHub that misbehaves at the byte level, on the token route and the
// Contents route.
func TestHostileGitHubUpstream(t *testing.T) {
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{env: map[string]string{"AGENT_GATEWAY_GITHUB_IO_TIMEOUT": "1s"}})
	d := s.docs
	cs := s.session(t, s.tokenA)
	surplus := gatewaytest.NewCanaryToken("surplus-bytes")
	s.canaries.Add("bytes an upstream sent past Content-Length", surplus)
	args := map[string]any{"source_id": s.sources[d.Readme]}
	cases := []struct {
		name  string
		route githubemu.Route
		fault githubemu.Fault
		code  string
	}{
		// First, while no installation token is cached.
		{"token: endless headers", githubemu.RouteToken, githubemu.Fault{Kind: githubemu.FaultEndlessHeaders}, "provider_malformed"},
		{"token: nesting over 32 levels", githubemu.RouteToken, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 201,
			Body: []byte(`{"token":"ghs_x","expires_at":"2099-01-01T00:00:00Z","x":` + hostile.Nested("1", 40) + `}`)}, "provider_malformed"},
		{"token: more bytes than Content-Length", githubemu.RouteToken, githubemu.Fault{Kind: githubemu.FaultExtraBytes, Body: []byte(surplus)}, ""},
		{"contents: more bytes than Content-Length", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultExtraBytes, Body: []byte(surplus)}, ""},
		{"contents: endless headers", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultEndlessHeaders}, "provider_malformed"},
		{"contents: 1,000 Via headers", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultHeaders, Header: thousandVia()}, ""},
		{"contents: stall mid-body", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultStallBody}, "provider_unavailable"},
		{"contents: reset after a valid prefix", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultReset}, "provider_unavailable"},
		{"contents: nesting over 32 levels", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200,
			Body: []byte(`{"type":"dir","entries":` + hostile.Nested("[]", 40) + `}`)}, "provider_malformed"},
		{"contents: huge number", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200,
			Body: []byte(`{"type":"file","encoding":"base64","path":"` + d.Readme + `","size":1e400,"content":""}`)}, "provider_malformed"},
		{"contents: NUL in the path", githubemu.RouteContents, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200,
			Body: []byte(`{"type":"file","encoding":"base64","path":"` + d.Readme + `\u0000","size":0,"content":"","sha":"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"}`)}, "provider_malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.emu.SetFault(c.route, c.fault)
			defer s.emu.ClearFaults()
			out, isErr := callTool(t, cs, "git_document_get", args)
			switch {
			case c.code == "" && (isErr || out["content"] != string(d.Files[d.Readme])):
				t.Fatalf("want the document, got %v", out)
			case c.code != "" && (!isErr || errorCode(t, out) != c.code):
				t.Fatalf("got %v, want %s", out, c.code)
			}
			if text := mustJSON(t, out); strings.Contains(text, surplus) || strings.Contains(text, "proxy-") {
				t.Fatalf("upstream bytes reached the result: %.300s", text)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	if logs := s.gw.Logs(); strings.Contains(logs, surplus) || strings.Contains(logs, "Unsolicited response") {
		t.Fatalf("the surplus reached the gateway's log:\n%s", logs)
	}
}
