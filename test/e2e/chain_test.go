package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestBodyLimit: 1 MiB bodies are accepted by the chain, one byte more is
// refused with 413 before parsing.
func TestBodyLimit(t *testing.T) {
	st := startForgejoStack(t, nil)
	pad := func(n int) string {
		// A valid JSON-RPC message padded with whitespace to exactly n bytes.
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		return msg + strings.Repeat(" ", n-len(msg))
	}
	resp, _ := postRPC(t, st.gw.URL+"/mcp/forgejo", pad(1<<20), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("exactly 1 MiB: status %d", resp.StatusCode)
	}
	resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", pad(1<<20+1), nil)
	if resp.StatusCode != 413 || !strings.Contains(out, "body_too_large") {
		t.Fatalf("1 MiB + 1: status %d %s", resp.StatusCode, out)
	}
}

// TestRateBudget: a spent read budget answers 429 with Retry-After, per
// caller: another caller still has its own budget.
func TestRateBudget(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "3"})
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	for i := 0; i < 3; i++ {
		if resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", list, nil); resp.StatusCode != 200 {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, out)
		}
	}
	resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", list, nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(out, "rate_limited") || !strings.Contains(out, `"id":7`) {
		t.Fatalf("spent budget: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	// A bearer on a message that never goes upstream is no identity
	// (docs/architecture.md#load-bounds): it spends the same IP budget.
	resp, out = postRPC(t, st.gw.URL+"/mcp/forgejo", list, map[string]string{"Authorization": "Bearer " + st.demo.ReaderToken})
	if resp.StatusCode != 429 {
		t.Fatalf("a bearer reset the IP budget: %d %s", resp.StatusCode, out)
	}
	// A tool that sends the bearer to Forgejo is keyed on the credential,
	// not the shared IP.
	diff := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"` + st.demo.Owner + `","repo":"` + st.demo.PublicRepo + `","index":` + strconv.FormatInt(st.demo.OpenPull, 10) + `}}}`
	resp, out = postRPC(t, st.gw.URL+"/mcp/forgejo", diff, map[string]string{"Authorization": "Bearer " + st.demo.ReaderToken})
	if resp.StatusCode != 200 {
		t.Fatalf("other caller: %d %s", resp.StatusCode, out)
	}
}

// TestUpstreamFaults: a redirect, a gzip body, a stall and a reset become
// clean tool errors with their codes and no upstream text.
func TestUpstreamFaults(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_FORGEJO_IO_TIMEOUT": "1s"})
	s := st.gw.Connect(t, "/mcp/forgejo", "")
	route := "/api/v1/repos/" + st.demo.Owner + "/" + st.demo.PublicRepo
	secret := "https://evil.example/steal?token=upstream-secret"
	cases := []struct {
		name  string
		fault forgejoemu.Fault
		code  string
	}{
		{"redirect", forgejoemu.Fault{Kind: forgejoemu.FaultRedirect, Location: secret}, "redirect_refused"},
		{"gzip", forgejoemu.Fault{Kind: forgejoemu.FaultGzip}, "upstream_malformed"},
		{"slow headers", forgejoemu.Fault{Kind: forgejoemu.FaultSlow, Delay: 3 * time.Second}, "upstream_timeout"},
		{"stalled body", forgejoemu.Fault{Kind: forgejoemu.FaultSlowBody, Delay: 3 * time.Second, ChunkBytes: 10}, "upstream_timeout"},
		{"reset", forgejoemu.Fault{Kind: forgejoemu.FaultReset}, "upstream_unavailable"},
		{"500 with body", forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: 500, Body: []byte(secret)}, "upstream_unavailable"},
		{"html", forgejoemu.Fault{Kind: forgejoemu.FaultHeaders, Header: map[string][]string{"Content-Type": {"text/html"}}}, "upstream_malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st.emu.SetFault(route, c.fault)
			defer st.emu.ClearFaults()
			st.emu.ResetRequests()
			out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": st.demo.Owner, "repo": st.demo.PublicRepo})
			if !isErr || errorCode(t, out) != c.code {
				t.Fatalf("got %v, want %s", out, c.code)
			}
			if text := mustJSON(t, out); strings.Contains(text, "evil.example") || strings.Contains(text, "upstream-secret") {
				t.Fatalf("upstream text leaked into the error: %s", text)
			}
			for _, r := range st.emu.Requests() {
				if strings.Contains(r.Path, "redirected") || strings.Contains(r.Path, "steal") {
					t.Fatalf("the gateway followed a redirect: %s", r.Path)
				}
			}
		})
	}
}

// TestCanaryTokenNeverLogged: a bearer sent on every kind of request never
// appears in the gateway's logs.
func TestCanaryTokenNeverLogged(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_LOG_LEVEL": "debug"})
	canary := "canary-" + strings.Repeat("c0ffee", 8)
	s := st.gw.Connect(t, "/mcp/forgejo", canary)
	callTool(t, s, "get_repository", map[string]any{"owner": st.demo.Owner, "repo": st.demo.PublicRepo})
	callTool(t, s, "get_repository", map[string]any{"owner": st.demo.Owner, "repo": "missing"})
	postRPC(t, st.gw.URL+"/mcp/forgejo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer " + canary, "Cookie": "session=" + canary})
	postRPC(t, st.gw.URL+"/mcp/forgejo?access_token="+canary, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	postRPC(t, st.gw.URL+"/mcp/forgejo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Authorization": "Basic " + canary})
	logs := st.gw.Logs()
	if !strings.Contains(logs, `"tool":"get_repository"`) {
		t.Fatalf("expected access log lines, got:\n%s", logs)
	}
	if strings.Contains(logs, canary) || strings.Contains(logs, "c0ffeec0ffee") {
		t.Fatalf("the canary token appears in the logs:\n%s", logs)
	}
}

// TestSharedBudgetsAcrossReplicas: two gateway processes on one Redis spend
// one budget per caller: a budget spent on A is refused on B.
func TestSharedBudgetsAcrossReplicas(t *testing.T) {
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	env := map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN":            emu.URL(),
		"AGENT_GATEWAY_RATELIMIT_REDIS_URL":       "redis://127.0.0.1:6379/0",
		"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "4",
	}
	requireRedis(t)
	a := gatewaytest.Start(t, gatewaytest.Options{Env: env})
	b := gatewaytest.Start(t, gatewaytest.Options{Env: env})
	// A fresh caller key per run, so earlier runs in the same minute do not
	// count: a credential on a tool that sends it upstream (a bearer on a
	// message that does not is no identity).
	bearer := "Bearer replica-test-" + randomHex(t)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"o","repo":"r","index":1}}}`
	for i, gw := range []string{a.URL, b.URL, a.URL, b.URL} {
		if resp, out := postRPC(t, gw+"/mcp/forgejo", list, map[string]string{"Authorization": bearer}); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, out)
		}
	}
	for _, gw := range []string{a.URL, b.URL} {
		if resp, _ := postRPC(t, gw+"/mcp/forgejo", list, map[string]string{"Authorization": bearer}); resp.StatusCode != 429 {
			t.Fatalf("%s accepted a request beyond the shared budget: %d", gw, resp.StatusCode)
		}
	}
}
