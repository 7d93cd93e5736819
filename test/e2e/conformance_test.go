package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// conformancePasses are the suite's server scenarios this gateway passes:
// every one that needs neither the suite's own fixtures nor a capability
// the gateway does not offer (testdata/conformance-expected-failures.yaml
// lists the rest, each with its reason).
var conformancePasses = []string{
	"server-initialize", "logging-set-level", "ping", "tools-list",
	"resources-list", "prompts-list", "dns-rebinding-protection",
}

// TestMCPConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance as test/ts pins it) against the real
// binary's Forgejo endpoint, with the owned tools/call path on (the
// default) and off: the whole active suite of server scenarios, checked
// against the baseline of expected failures, so a scenario that starts
// failing fails the test, and one that starts passing does too (the
// baseline is then stale). The named scenarios must pass by name.
func TestMCPConformance(t *testing.T) {
	node, dir := tsClient(t)
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	baseline := filepath.Join(root, "test", "e2e", "testdata", "conformance-expected-failures.yaml")
	for _, path := range []struct {
		name string
		env  map[string]string
	}{
		{"owned path", nil},
		{"SDK path", map[string]string{"AGENT_GATEWAY_MCP_OWNED_TOOL_CALLS": "false"}},
	} {
		t.Run(path.name, func(t *testing.T) {
			st := startForgejoStack(t, path.env)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
				"server", "--url", st.gw.URL+"/mcp/forgejo", "--expected-failures", baseline)
			cmd.Dir = t.TempDir()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			text := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(out.String(), "")
			if err != nil {
				t.Fatalf("the conformance suite against the baseline: %v\n%s", err, text)
			}
			for _, scenario := range conformancePasses {
				if !regexp.MustCompile(`(?m)^✓ ` + regexp.QuoteMeta(scenario) + `: [1-9][0-9]* passed, 0 failed`).MatchString(text) {
					t.Errorf("scenario %s did not pass:\n%s", scenario, text)
				}
			}
			if !regexp.MustCompile(`Baseline check passed`).MatchString(text) {
				t.Errorf("no baseline verdict in:\n%s", text)
			}
		})
	}
}
