package e2e

import (
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDiffCommandDocumentsEndpoint: `diff` pointed at the gateway's
// documents endpoint (with a Forgejo token, the easy mistake) says that
// this is not a Forgejo endpoint and which one is, exit 2, instead of
// reporting the gateway's "the bearer token is not valid"; the Forgejo
// endpoint of the same gateway reads the diff.
func TestDiffCommandDocumentsEndpoint(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	bin := gatewaytest.Binary(t)
	env := []string{"AGENT_GATEWAY_TOKEN=" + d.ReaderToken}
	target := d.Owner + "/" + d.PublicRepo + "#1"
	for _, endpoint := range []string{st.gw.URL + "/mcp/documents", st.gw.URL + "/mcp/documents/"} {
		run := runDiffCommand(t, bin, env, "--endpoint", endpoint, target)
		if run.code != 2 || !strings.Contains(string(run.stderr), "this is not a Forgejo endpoint") ||
			!strings.Contains(string(run.stderr), "/mcp/forgejo") || strings.Contains(string(run.stderr), "not valid") || len(run.stdout) != 0 {
			t.Fatalf("diff --endpoint %s: exit %d\nstdout: %.200s\nstderr: %s", endpoint, run.code, run.stdout, run.stderr)
		}
	}
	if run := runDiffCommand(t, bin, env, "--endpoint", st.gw.URL+"/mcp/forgejo", target); run.code != 0 || len(run.stdout) == 0 {
		t.Fatalf("diff from the Forgejo endpoint: exit %d\n%s", run.code, run.stderr)
	}
}
