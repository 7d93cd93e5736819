package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDemoReexec runs the README's first command the way it reaches the
// shipped binary: `agent-gateway demo` without the demo build tag, in the
// source checkout. That binary links no emulator; it must build the demo
// binary (saying so on stderr before it compiles: the first line the user
// sees), replace itself with it and so start the real demo, which then
// answers on the address the user asked for. A second start from the same
// sources uses the cached binary: no build, no progress line.
func TestDemoReexec(t *testing.T) {
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	goCache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	// A cache directory of the test's own for the demo binary; the go
	// build cache stays the shared one, so only the demo's own packages
	// and its link are built.
	userCache := t.TempDir()
	env := append(os.Environ(), "GORACE=atexit_sleep_ms=0", "XDG_CACHE_HOME="+userCache, "GOCACHE="+strings.TrimSpace(string(goCache)))
	cachedBinary := func() (os.FileInfo, bool) {
		bins, _ := filepath.Glob(filepath.Join(userCache, "agent-gateway", "demo", "*", "agent-gateway-demo"))
		if len(bins) != 1 {
			return nil, false
		}
		fi, err := os.Stat(bins[0])
		return fi, err == nil
	}

	if _, ok := cachedBinary(); ok {
		t.Fatal("a demo binary before the first start")
	}
	first := startReexecDemo(t, root, env)
	if first.stderr[0] != "building the demo (first run compiles; later runs start in seconds)…" {
		t.Fatalf("the first stderr line is %q, want the progress line\n%s", first.stderr[0], strings.Join(first.stderr, "\n"))
	}
	built, ok := cachedBinary()
	if !ok {
		t.Fatal("no demo binary in the user cache directory after the first start")
	}
	fj := gatewaytest.ConnectURL(t, first.endpoint, "")
	if got := toolNames(t, fj); strings.Join(got, ",") != strings.Join(anonymousTools, ",") {
		t.Fatalf("re-executed demo tools/list = %v", got)
	}
	first.stop()

	// In a go workspace the demo's sources are not all in the checkout,
	// so every start builds (server/demo_build.go).
	if out, _ := exec.Command("go", "env", "GOWORK").Output(); strings.TrimSpace(string(out)) != "" && strings.TrimSpace(string(out)) != "off" {
		t.Skipf("GOWORK=%s: every start builds the demo", strings.TrimSpace(string(out)))
	}
	second := startReexecDemo(t, root, env)
	for _, line := range second.stderr {
		if strings.Contains(line, "building the demo") || strings.Contains(line, "built the demo") {
			t.Fatalf("the second start built the demo again: %q\n%s", line, strings.Join(second.stderr, "\n"))
		}
	}
	if again, _ := cachedBinary(); again == nil || !again.ModTime().Equal(built.ModTime()) {
		t.Fatal("the second start rewrote the cached demo binary")
	}
	if got := toolNames(t, gatewaytest.ConnectURL(t, second.endpoint, "")); strings.Join(got, ",") != strings.Join(anonymousTools, ",") {
		t.Fatalf("the cached demo's tools/list = %v", got)
	}
}

// reexecDemo is one start of the shipped binary's `demo`: the Forgejo
// endpoint its banner printed and the stderr lines written until then.
type reexecDemo struct {
	endpoint string
	stderr   []string
	stop     func()
}

// startReexecDemo starts `agent-gateway demo` in root and waits for its
// banner's Forgejo endpoint.
func startReexecDemo(t *testing.T, root string, env []string) *reexecDemo {
	t.Helper()
	addr := gatewaytest.FreeAddr(t)
	cmd := exec.Command(gatewaytest.Binary(t), "demo", "--listen", addr)
	cmd.Dir = root
	// The demo is exec'd in place; a terminal's Ctrl-C reaches the whole
	// process group (and the go build while one runs); the test stops the
	// group alike.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	var once sync.Once
	stop := func() {
		once.Do(func() {
			gatewaytest.StopCommand(cmd, 30*time.Second,
				func() { _ = syscall.Kill(-pid, syscall.SIGINT) },
				func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
		})
	}
	t.Cleanup(stop)

	var mu sync.Mutex
	var stderr []string
	lines := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(stderr) }
	go func() {
		sc := bufio.NewScanner(stderrPipe)
		for sc.Scan() {
			mu.Lock()
			stderr = append(stderr, sc.Text())
			mu.Unlock()
		}
	}()
	endpoint := regexp.MustCompile(`Forgejo endpoint\s+(\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := endpoint.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		close(found)
	}()
	// A first start compiles the demo (go's build cache keeps its packages).
	var url string
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("demo exited before printing its endpoints\n%s", strings.Join(lines(), "\n"))
		}
		url = u
	case <-time.After(5 * time.Minute):
		t.Fatalf("no endpoints printed\n%s", strings.Join(lines(), "\n"))
	}
	if !strings.Contains(url, addr) {
		t.Fatalf("endpoint %s, want one on %s", url, addr)
	}
	// The gateway logs "listening" before the banner: stderr holds a line.
	got := lines()
	for len(got) == 0 {
		time.Sleep(10 * time.Millisecond)
		got = lines()
	}
	return &reexecDemo{endpoint: url, stderr: got, stop: stop}
}

// TestDemoOutsideCheckout: the shipped binary, run where there is no source
// to build the demo from, fails with a message saying where to run it, and
// starts nothing.
func TestDemoOutsideCheckout(t *testing.T) {
	cmd := exec.Command(gatewaytest.Binary(t), "demo", "--listen", gatewaytest.FreeAddr(t))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("demo outside a checkout did not exit")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "run `go run . demo` in a source checkout of github.com/agent-gateway/agent-gateway") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
}
