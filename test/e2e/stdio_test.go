package e2e

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// stdioSession starts `agent-gateway stdio` with env and connects the SDK
// client over its stdin/stdout.
func stdioSession(t *testing.T, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), "stdio")
	cmd.Env = append(os.Environ(), append([]string{"AGENT_GATEWAY_DATA_DIR=" + t.TempDir()}, env...)...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-stdio", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStdioMode drives the Forgejo catalog over stdio, with and without
// the process's own credential.
func TestStdioMode(t *testing.T) {
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	d, err := emu.SeedDemo()
	if err != nil {
		t.Fatal(err)
	}
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
			for _, r := range emu.Requests() {
				if r.Header.Get("Authorization") != "" {
					t.Fatalf("an anonymous tool sent the process credential upstream: %s", r.Path)
				}
			}
		})
	}
}
