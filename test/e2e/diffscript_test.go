package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDiffScriptedExitCodes runs the README's scripted diff block as it
// stands — `make build`, then bin/agent-gateway diff and a case on its exit
// code — against the real gateway in front of the Core emulator's demo
// data, with only the demo's token and address put in: the verified diff
// exits 0, the same line without a token 2, a pull request that does not
// exist 3. (Under `go run` the last two would both be 1.)
func TestDiffScriptedExitCodes(t *testing.T) {
	bin := gatewaytest.MakeBinary(t)
	st := startForgejoStack(t, nil)
	block := guideBlock(t, "README.md", "TestDiffScriptedExitCodes", 0)
	script := replaceAll(t, block,
		"make build ", "# make build (done once by the test) ",
		"<the Forgejo token the demo printed>", st.demo.ReaderToken,
		"http://127.0.0.1:8080", st.gw.URL)
	for _, tc := range []struct {
		name   string
		script string
		says   string
	}{
		{"the verified diff", script, "verified: pr1.diff is the whole diff"},
		{"no token", replaceAll(t, script, "export AGENT_GATEWAY_TOKEN=", "NO_TOKEN="), "refused: the command line"},
		{"no such pull request", replaceAll(t, script, "demo/gateway#1", "demo/gateway#999"), "the endpoint or the tool failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(bin, filepath.Join(dir, "bin", "agent-gateway")); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", tc.script)
			cmd.Dir = dir
			cmd.Env = gatewaytest.CleanEnv()
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.says) {
				t.Fatalf("%v:\n%s\n---\n%s", err, tc.script, out)
			}
			diff, _ := os.ReadFile(filepath.Join(dir, "pr1.diff"))
			if verified := tc.name == "the verified diff"; verified != bytes.HasPrefix(diff, []byte("diff --git ")) {
				t.Fatalf("pr1.diff holds %d bytes after %q", len(diff), tc.name)
			}
		})
	}
}
