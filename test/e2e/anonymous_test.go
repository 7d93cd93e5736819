package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// anonymousTools is the anonymous four-tool toolset
// (docs/tools.md#anonymous-tools).
var anonymousTools = []string{"get_pull_request", "get_repository", "list_pull_requests", "search_repositories"}

// forgejoStack is an emulated Forgejo with demo data and the real gateway
// binary in front of it.
type forgejoStack struct {
	emu  *forgejoemu.Emulator
	demo *forgejoemu.Demo
	gw   *gatewaytest.Process
	// canaries are scanned for in the gateway's logs, MCP responses and
	// metrics when the test ends: the demo users' Forgejo bearers, the
	// process's own Forgejo token when one is configured, and the cursor
	// signing secret. A test adds the secrets it makes itself.
	canaries *gatewaytest.Canaries
}

// startDemoEmulator starts a Core emulator holding the demo data
// (forgejoemu.SeedDemo), closed when the test ends.
func startDemoEmulator(t testing.TB) (*forgejoemu.Emulator, *forgejoemu.Demo) {
	t.Helper()
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	demo, err := emu.SeedDemo()
	if err != nil {
		t.Fatal(err)
	}
	return emu, demo
}

func startForgejoStack(t *testing.T, env map[string]string) *forgejoStack {
	t.Helper()
	emu, demo := startDemoEmulator(t)
	e := map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": emu.URL()}
	for k, v := range env {
		e[k] = v
	}
	c := &gatewaytest.Canaries{}
	c.Add("the reader's Forgejo bearer", demo.ReaderToken)
	c.Add("the bot's Forgejo bearer", demo.BotToken)
	if tok := e["AGENT_GATEWAY_FORGEJO_TOKEN"]; tok != "" {
		c.Add("the process's own Forgejo token", tok)
	}
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: e, Canaries: c})
	addCursorSecret(t, c, gw.DataDir)
	return &forgejoStack{emu: emu, demo: demo, gw: gw, canaries: c}
}

// addCursorSecret registers the cursor signing secret the gateway
// generated into its data directory.
func addCursorSecret(t *testing.T, c *gatewaytest.Canaries, dataDir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "cursor.secret"))
	if err != nil {
		t.Fatalf("the generated cursor secret: %v", err)
	}
	c.Add("the cursor signing secret", strings.TrimSpace(string(b)))
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: want exactly one content block, got %d", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	if res.StructuredContent != nil {
		t.Fatalf("%s: structured content duplicates the text block", name)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil {
		t.Fatalf("%s: result is not a JSON object: %v\n%s", name, err, text.Text)
	}
	return out, res.IsError
}

func errorCode(t *testing.T, out map[string]any) string {
	t.Helper()
	e, ok := out["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %v", out)
	}
	return e["code"].(string)
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestAnonymousToolsEndToEnd drives every anonymous tool through the real
// binary with the official SDK client, and proves no credential reached
// the emulator even when the caller sent one.
func TestAnonymousToolsEndToEnd(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	anon := st.gw.Connect(t, "/mcp/forgejo", "")
	if got := toolNames(t, anon); !slices.Equal(got, anonymousTools) {
		t.Fatalf("anonymous tools/list = %v, want exactly %v", got, anonymousTools)
	}
	// A caller with a bearer: the anonymous tools still send nothing upstream.
	authed := st.gw.Connect(t, "/mcp/forgejo", d.ReaderToken)

	for _, s := range []*mcp.ClientSession{anon, authed} {
		st.emu.ResetRequests()
		out, isErr := callTool(t, s, "search_repositories", map[string]any{"q": "gateway"})
		if isErr {
			t.Fatalf("search: %v", out)
		}
		items := out["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["full_name"] != d.Owner+"/"+d.PublicRepo {
			t.Fatalf("search items = %v", items)
		}
		if out["has_more"] != false || out["page"] != float64(1) {
			t.Fatalf("search page = %v", out)
		}

		out, isErr = callTool(t, s, "get_repository", map[string]any{"owner": d.Owner, "repo": d.PublicRepo})
		if isErr || out["name"] != d.PublicRepo || out["private"] != false || out["default_branch"] != "main" {
			t.Fatalf("get_repository = %v", out)
		}

		out, isErr = callTool(t, s, "list_pull_requests", map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "state": "all"})
		if isErr || len(out["items"].([]any)) != 3 {
			t.Fatalf("list_pull_requests(all) = %v", out)
		}
		out, _ = callTool(t, s, "list_pull_requests", map[string]any{"owner": d.Owner, "repo": d.PublicRepo})
		for _, it := range out["items"].([]any) {
			if it.(map[string]any)["state"] != "open" {
				t.Fatalf("default listing includes a non-open pull request: %v", it)
			}
		}

		out, isErr = callTool(t, s, "get_pull_request", map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull})
		if isErr || out["number"] != float64(d.OpenPull) || out["state"] != "open" {
			t.Fatalf("get_pull_request = %v", out)
		}
		pull, _ := st.emu.Pull(d.Owner, d.PublicRepo, d.OpenPull)
		if out["merge_base"] != pull.MergeBase() || out["head"].(map[string]any)["sha"] == "" {
			t.Fatalf("get_pull_request merge_base/head = %v, want merge base %s", out, pull.MergeBase())
		}

		// The private repository is invisible to anonymous reads, whoever asks.
		out, isErr = callTool(t, s, "get_repository", map[string]any{"owner": d.Owner, "repo": d.PrivateRepo})
		if !isErr || errorCode(t, out) != "not_found" {
			t.Fatalf("private repository = %v", out)
		}

		for _, r := range st.emu.Requests() {
			if r.Header.Get("Authorization") != "" {
				t.Fatalf("an anonymous tool sent Authorization upstream: %s %s", r.Method, r.Path)
			}
		}
	}
}

// TestAnonymousRefusals: strict arguments are refused before any upstream
// request, and authenticated-only tools are not callable anonymously.
func TestAnonymousRefusals(t *testing.T) {
	st := startForgejoStack(t, nil)
	s := st.gw.Connect(t, "/mcp/forgejo", "")
	st.emu.ResetRequests()
	cases := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"string index", "get_pull_request", map[string]any{"owner": "demo", "repo": "gateway", "index": "1"}},
		{"float index", "get_pull_request", map[string]any{"owner": "demo", "repo": "gateway", "index": 1.5}},
		{"zero index", "get_pull_request", map[string]any{"owner": "demo", "repo": "gateway", "index": 0}},
		{"negative page", "search_repositories", map[string]any{"q": "", "page": -1}},
		{"unknown member", "get_repository", map[string]any{"owner": "demo", "repo": "gateway", "token": "x"}},
		{"bad state", "list_pull_requests", map[string]any{"owner": "demo", "repo": "gateway", "state": "merged"}},
		{"slash in owner", "get_repository", map[string]any{"owner": "demo/../x", "repo": "gateway"}},
		{"dot-dot repo", "get_repository", map[string]any{"owner": "demo", "repo": ".."}},
		{"missing repo", "get_repository", map[string]any{"owner": "demo"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, isErr := callTool(t, s, c.tool, c.args)
			if !isErr || errorCode(t, out) != "invalid_arguments" {
				t.Fatalf("got %v, want invalid_arguments", out)
			}
		})
	}
	if n := len(st.emu.Requests()); n != 0 {
		t.Fatalf("refused calls reached the emulator %d times", n)
	}
}

// TestRawJSONRPC is the README's curl: initialize and tools/list without a
// session, on every supported protocol revision.
func TestRawJSONRPC(t *testing.T) {
	st := startForgejoStack(t, nil)
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
			resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", body, nil)
			if resp.StatusCode != 200 || !strings.Contains(out, `"protocolVersion":"`+version+`"`) {
				t.Fatalf("initialize: %d %s", resp.StatusCode, out)
			}
			resp, out = postRPC(t, st.gw.URL+"/mcp/forgejo", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": version})
			var msg struct {
				Result struct {
					Tools []struct{ Name string }
				}
			}
			if err := json.Unmarshal([]byte(out), &msg); err != nil || resp.StatusCode != 200 {
				t.Fatalf("tools/list: %d %s", resp.StatusCode, out)
			}
			var names []string
			for _, tool := range msg.Result.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, anonymousTools) {
				t.Fatalf("tools/list = %v", names)
			}
		})
	}
}

func postRPC(t *testing.T, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
