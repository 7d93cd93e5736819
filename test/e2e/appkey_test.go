package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestAppKeyFileProtected: the real binary refuses to start, and
// --config-test refuses the configuration, when the GitHub App's private
// key file (a protected file,
// docs/architecture.md#github-app-and-installation-tokens) is readable by
// group or others.
// Both exit 2 with a message naming the key, the file, its mode in octal
// and the command that fixes it; the same key at mode 0600 passes
// --config-test.
func TestAppKeyFileProtected(t *testing.T) {
	key := writeAppKey(t)
	run := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		// A gateway that started anyway is stopped, so the test fails
		// rather than waits.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, gatewaytest.Binary(t), args...)
		cmd.Env = append(gatewaytest.CleanEnv(),
			"AGENT_GATEWAY_DATA_DIR="+t.TempDir(),
			"AGENT_GATEWAY_LISTEN="+gatewaytest.FreeAddr(t),
			"HEYAIRA_GITHUB_APP_ID=1",
			"HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE="+key,
		)
		code, out, errs := runCommand(t, cmd)
		return code, out + errs
	}
	if code, out := run(t, "serve", "--config-test"); code != 0 {
		t.Fatalf("a 0600 key file: --config-test exit %d\n%s", code, out)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve", "--config-test"}, {"serve"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out := run(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, want := range []string{"github.private_key_file: ", key + " has mode 0644", "chmod 600 " + key} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "listening") {
				t.Errorf("the key was printed, or the gateway started:\n%s", out)
			}
		})
	}
}
