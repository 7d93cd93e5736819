package e2e

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// stdioSession starts `agent-gateway stdio` with env and connects the SDK
// client over its stdin/stdout. The process's log (stderr) is scanned at
// the end for its own credentials (AGENT_GATEWAY_FORGEJO_TOKEN or
// _PASSWORD in env): over stdio they are canaries too.
func stdioSession(t *testing.T, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), "stdio")
	cmd.Env = append(os.Environ(), append([]string{"AGENT_GATEWAY_DATA_DIR=" + t.TempDir()}, env...)...)
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

// TestStdioMode drives the Forgejo catalog over stdio, with and without
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
