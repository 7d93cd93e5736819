package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDemoHelpAndConfigTest: `demo --help` prints the demo's flags and
// `demo --config-test` checks the configuration, prints it and exits —
// both at once, with no demo built (the shipped binary, in the checkout:
// nothing appears in the demo cache, no progress line) and no demo
// started (the demo build: it exits instead of serving). --help used to
// build the demo first (24 s) and --config-test started it.
func TestDemoHelpAndConfigTest(t *testing.T) {
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, bin string, args ...string) (stdout, stderr string, userCache string) {
		t.Helper()
		userCache = t.TempDir()
		cmd := exec.Command(bin, args...)
		cmd.Dir = root
		cmd.Env = append(gatewaytest.CleanEnv(), "GORACE=atexit_sleep_ms=0", "XDG_CACHE_HOME="+userCache)
		out, errOut, err := runBounded(t, cmd, 30*time.Second)
		if err != nil {
			t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut)
		}
		return out, errOut, userCache
	}
	builtNothing := func(t *testing.T, stderr, userCache string) {
		t.Helper()
		if strings.Contains(stderr, "building the demo") {
			t.Fatalf("it built the demo:\n%s", stderr)
		}
		if _, err := os.Stat(filepath.Join(userCache, "agent-gateway", "demo")); !os.IsNotExist(err) {
			t.Fatalf("the demo cache exists (%v): the demo was built", err)
		}
	}
	for _, b := range []struct{ name, bin string }{
		{"shipped", gatewaytest.Binary(t)},
		{"demo build", gatewaytest.DemoBinary(t)},
	} {
		t.Run(b.name+" --help", func(t *testing.T) {
			out, errOut, cache := run(t, b.bin, "demo", "--help")
			if !strings.HasPrefix(out, "usage: agent-gateway demo [flags]") || !strings.Contains(out, "-listen") || !strings.Contains(out, "-config-test") {
				t.Fatalf("demo --help printed:\n%s", out)
			}
			builtNothing(t, errOut, cache)
		})
		t.Run(b.name+" --config-test", func(t *testing.T) {
			out, errOut, cache := run(t, b.bin, "demo", "--config-test", "--listen", "127.0.0.1:9")
			if !strings.HasPrefix(out, "configuration OK\n") || !strings.Contains(out, "127.0.0.1:9") ||
				!strings.Contains(out, "the demo replaces forgejo.origin") || strings.Contains(out, "Stop with Ctrl-C.") {
				t.Fatalf("demo --config-test printed:\n%s", out)
			}
			builtNothing(t, errOut, cache)
		})
	}
}
