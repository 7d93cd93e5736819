package e2e

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// stdioSession starts `agent-gateway stdio` with env (and a data_dir of
// its own) and connects the SDK client over its stdin/stdout.
func stdioSession(t *testing.T, env ...string) *mcp.ClientSession {
	t.Helper()
	return stdioSessionIn(t, "", append([]string{"AGENT_GATEWAY_DATA_DIR=" + t.TempDir()}, env...)...)
}

// stdioSessionIn starts `agent-gateway stdio` in the working directory dir
// (the test's own when empty), as a client launches it, with env as its
// only configuration, and connects the SDK client over its stdin/stdout.
// The process's log (stderr) is scanned at the end for its own credentials
// (AGENT_GATEWAY_FORGEJO_TOKEN or _PASSWORD in env): over stdio they are
// canaries too.
func stdioSessionIn(t *testing.T, dir string, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), "stdio")
	cmd.Dir = dir
	cmd.Env = append(gatewaytest.CleanEnv(), env...)
	logs := &syncWriter{}
	cmd.Stderr = logs
	canaries := &gatewaytest.Canaries{}
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "_TOKEN") || strings.HasSuffix(k, "_PASSWORD") {
			canaries.Add("the stdio process's own credential "+k, v)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-stdio", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		_ = s.Close()
		canaries.Check(t, "the stdio process's log", logs.String())
		if t.Failed() {
			t.Logf("stdio process log:\n%s", logs.String())
		}
	})
	return s
}

// TestStdioMode drives the Forgejo toolset over stdio, with and without
// the process's own credential.
func TestStdioMode(t *testing.T) {
	emu, d := startDemoEmulator(t)
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"anonymous", nil},
		{"process token", []string{"AGENT_GATEWAY_FORGEJO_TOKEN=" + d.ReaderToken}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := stdioSession(t, append([]string{"AGENT_GATEWAY_FORGEJO_ORIGIN=" + emu.URL()}, c.env...)...)
			names := toolNames(t, s)
			for _, want := range anonymousTools {
				if !slices.Contains(names, want) {
					t.Fatalf("stdio tools %v lack %s", names, want)
				}
			}
			if c.env == nil && !slices.Equal(names, anonymousTools) {
				t.Fatalf("anonymous stdio tools = %v, want exactly %v", names, anonymousTools)
			}
			emu.ResetRequests()
			out, isErr := callTool(t, s, "get_pull_request", map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.ClosedPull})
			if isErr || out["state"] != "closed" || out["merged"] != true {
				t.Fatalf("get_pull_request over stdio = %v", out)
			}
			if strings.Contains(mustJSON(t, out), d.ReaderToken) {
				t.Fatal("the process token appears in a tool result")
			}
			for _, r := range emu.Requests() {
				if r.Header.Get("Authorization") != "" {
					t.Fatalf("an anonymous tool sent the process credential upstream: %s", r.Path)
				}
			}
		})
	}
}

// TestStdioLeavesNoData: an MCP client launches `agent-gateway stdio` in
// whatever directory it happens to run in. With no data_dir configured,
// stdio serves the Forgejo toolset (initialize, tools/list, an anonymous
// and an authenticated call) and leaves that directory as it found it: no
// ./data, no SQLite file, no generated cursor secret. It needs none of
// them: the process's own credential is its only identity.
func TestStdioLeavesNoData(t *testing.T) {
	emu, d := startDemoEmulator(t)
	dir := t.TempDir()
	s := stdioSessionIn(t, dir, "AGENT_GATEWAY_FORGEJO_ORIGIN="+emu.URL(), "AGENT_GATEWAY_FORGEJO_TOKEN="+d.ReaderToken)
	if names := toolNames(t, s); !slices.Contains(names, "list_agent_work_grants") {
		t.Fatalf("stdio with the process token lists %v", names)
	}
	if out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": d.Owner, "repo": d.PublicRepo}); isErr || out["name"] != d.PublicRepo {
		t.Fatalf("get_repository over stdio = %v", out)
	}
	if out, isErr := callTool(t, s, "list_agent_work_grants", map[string]any{}); isErr {
		t.Fatalf("list_agent_work_grants over stdio = %v", out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("stdio left %v in the directory it was started in", names)
	}
}
