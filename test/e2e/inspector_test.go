package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// inspectorRun is what one `mcp-inspector --cli` run printed and how it
// exited.
type inspectorRun struct {
	stdout, stderr string
	code           int
}

// runInspector runs the MCP Inspector's CLI (the version test/ts pins)
// with args, as `npx @modelcontextprotocol/inspector --cli args…` would,
// with a home directory of its own so nothing of the machine's Inspector
// settings applies.
func runInspector(t *testing.T, args ...string) inspectorRun {
	t.Helper()
	_, dir := tsClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "mcp-inspector"), append([]string{"--cli"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "MCP_AUTO_OPEN_ENABLED=false")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return inspectorRun{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(t, err)}
}

// TestInspectorCLI drives the real binary with the MCP Inspector's CLI
// (@modelcontextprotocol/inspector as test/ts pins it, on the node this
// machine has): given the whole endpoint URL and --transport http it lists
// the tools and calls an anonymous tool, and with a bearer header the
// authenticated ones too. Without --transport this Inspector refuses a
// URL whose path does not end in /mcp, and at /mcp itself it shows the
// gateway's unknown_endpoint answer naming both endpoints: what
// docs/oauth.md tells a user.
func TestInspectorCLI(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	endpoint := st.gw.URL + "/mcp/forgejo"

	tools := func(t *testing.T, run inspectorRun) []string {
		t.Helper()
		var out struct{ Tools []struct{ Name string } }
		if run.code != 0 || json.Unmarshal([]byte(run.stdout), &out) != nil {
			t.Fatalf("tools/list: exit %d\n%s\n%s", run.code, run.stdout, run.stderr)
		}
		var names []string
		for _, tool := range out.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		return names
	}
	t.Run("tools/list, anonymous", func(t *testing.T) {
		if names := tools(t, runInspector(t, endpoint, "--transport", "http", "--method", "tools/list")); !slices.Equal(names, anonymousTools) {
			t.Fatalf("the Inspector lists %v, want %v", names, anonymousTools)
		}
	})
	t.Run("tools/call of an anonymous tool", func(t *testing.T) {
		run := runInspector(t, endpoint, "--transport", "http", "--method", "tools/call",
			"--tool-name", "get_repository", "--tool-arg", "owner="+d.Owner, "--tool-arg", "repo="+d.PublicRepo)
		var out struct {
			IsError bool
			Content []struct{ Text string }
		}
		if run.code != 0 || json.Unmarshal([]byte(run.stdout), &out) != nil || out.IsError || len(out.Content) != 1 {
			t.Fatalf("exit %d\n%s\n%s", run.code, run.stdout, run.stderr)
		}
		var repo struct {
			FullName string `json:"full_name"`
		}
		if err := json.Unmarshal([]byte(out.Content[0].Text), &repo); err != nil || repo.FullName != d.Owner+"/"+d.PublicRepo {
			t.Fatalf("get_repository through the Inspector: %v %s", err, out.Content[0].Text)
		}
	})
	t.Run("a bearer header lists the authenticated tools", func(t *testing.T) {
		names := tools(t, runInspector(t, endpoint, "--transport", "http", "--header", "Authorization: Bearer "+d.ReaderToken, "--method", "tools/list"))
		if !slices.Contains(names, "get_pull_request_diff") || !slices.Contains(names, "submit_agent_work_proposal") {
			t.Fatalf("with a bearer the Inspector lists %v", names)
		}
	})
	t.Run("no --transport: this Inspector will not guess", func(t *testing.T) {
		run := runInspector(t, endpoint, "--method", "tools/list")
		if run.code == 0 || !strings.Contains(run.stdout+run.stderr, "Transport type not specified") {
			t.Fatalf("exit %d\n%s\n%s", run.code, run.stdout, run.stderr)
		}
	})
	t.Run("the bare mcp path names both endpoints", func(t *testing.T) {
		run := runInspector(t, st.gw.URL+"/mcp", "--transport", "http", "--method", "tools/list")
		out := run.stdout + run.stderr
		if run.code == 0 || !strings.Contains(out, "unknown_endpoint") || !strings.Contains(out, endpoint) || !strings.Contains(out, st.gw.URL+"/mcp/documents") {
			t.Fatalf("exit %d\n%s", run.code, out)
		}
	})
}

// TestUnknownEndpointNamesBoth: /mcp, a trailing slash and any other path
// under /mcp answer 404 unknown_endpoint with both endpoints under
// public_url (not the Host the request named), for POST and GET alike,
// while the two endpoints themselves still serve.
func TestUnknownEndpointNamesBoth(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_PUBLIC_URL": "https://gateway.example"})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	want := map[string]string{"forgejo": "https://gateway.example/mcp/forgejo", "documents": "https://gateway.example/mcp/documents"}
	for _, path := range []string{"/mcp", "/mcp/", "/mcp/forgejo/", "/mcp/github", "/mcp/forgejo/tools"} {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			t.Run(method+" "+path, func(t *testing.T) {
				req, _ := http.NewRequest(method, st.gw.URL+path, strings.NewReader(list))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body struct {
					Error struct {
						Code      string
						Endpoints map[string]string
					}
				}
				if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body); err != nil || resp.StatusCode != http.StatusNotFound ||
					body.Error.Code != "unknown_endpoint" || !maps.Equal(body.Error.Endpoints, want) {
					t.Fatalf("%d %v %+v", resp.StatusCode, err, body)
				}
			})
		}
	}
	if resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", list, nil); resp.StatusCode != http.StatusOK || !strings.Contains(out, "get_repository") {
		t.Fatalf("/mcp/forgejo: %d %s", resp.StatusCode, out)
	}
}
