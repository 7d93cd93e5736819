package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestOwnedToolCallsEndToEnd drives the Forgejo tools through the real
// binary with the official SDK client at each protocol revision, with the
// owned tools/call path on (the default) and, beside it, a second gateway
// with mcp.owned_tool_calls false in front of the same emulator. Every
// answer must be the same through both; the access log says the owned
// path answered the legacy revisions' calls, and that 2026-07-28's (whose
// per-request _meta it leaves to the SDK) and every call of the SDK-only
// gateway were not.
func TestOwnedToolCallsEndToEnd(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	sdkOnly := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN":       st.emu.URL(),
		"AGENT_GATEWAY_MCP_OWNED_TOOL_CALLS": "false",
	}, Canaries: st.canaries})
	repo := map[string]any{"owner": d.Owner, "repo": d.PublicRepo}
	calls := []struct {
		bearer string
		tool   string
		args   map[string]any
	}{
		{"", "search_repositories", map[string]any{"q": "gateway"}},
		{"", "get_repository", repo},
		{"", "get_repository", map[string]any{"owner": d.Owner, "repo": d.PrivateRepo}},
		{"", "list_pull_requests", map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "state": "all"}},
		{"", "get_pull_request", map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.ClosedPull}},
		{"", "get_pull_request", map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": 0}},
		{d.ReaderToken, "get_repository", repo},
		{d.ReaderToken, "list_agent_work_grants", repo},
	}
	for _, version := range []string{"2025-06-18", "2025-11-25", ""} {
		name := version
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			sessions := map[string][2]*mcp.ClientSession{}
			for _, c := range calls {
				if _, ok := sessions[c.bearer]; !ok {
					sessions[c.bearer] = [2]*mcp.ClientSession{
						st.gw.ConnectVersion(t, "/mcp/forgejo", c.bearer, version),
						sdkOnly.ConnectVersion(t, "/mcp/forgejo", c.bearer, version),
					}
				}
				s := sessions[c.bearer]
				before := len(st.gw.Logs())
				owned := callText(t, s[0], c.tool, c.args)
				line := toolsCallLine(t, st.gw, before, c.tool)
				if got, want := strings.Contains(line, `"served_by":"gateway"`), version != ""; got != want {
					t.Errorf("%s: served by the owned path %v, want %v: %s", c.tool, got, want, line)
				}
				if sdk := callText(t, s[1], c.tool, c.args); sdk != owned {
					t.Errorf("%s %v: owned path answered\n%s\nthe SDK\n%s", c.tool, c.args, owned, sdk)
				}
			}
		})
	}
	if strings.Contains(sdkOnly.Logs(), "served_by") {
		t.Error("the gateway with mcp.owned_tool_calls false answered a call on the owned path")
	}
}

// callText calls tool and returns its one text block, marked when the
// result is an error.
func callText(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks", tool, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T", tool, res.Content[0])
	}
	if res.IsError {
		return "isError " + text.Text
	}
	return text.Text
}

// toolsCallLine is the access line of the tools/call of tool that gw
// logged past byte from of its log. The line is written as the response
// ends and read from the process's stderr, so it may arrive after the
// answer: this waits for it (a bound on a wait, not on the gateway's speed).
func toolsCallLine(t *testing.T, gw *gatewaytest.Process, from int, tool string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range strings.Split(gw.Logs()[from:], "\n") {
			if strings.Contains(line, `"msg":"request"`) && strings.Contains(line, `"rpc_method":"tools/call"`) && strings.Contains(line, `"tool":"`+tool+`"`) {
				return line
			}
		}
	}
	t.Fatalf("no access line of the tools/call of %s in\n%s", tool, gw.Logs()[from:])
	return ""
}
