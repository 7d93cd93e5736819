package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDemoReexec runs the README's first command the way it reaches the
// shipped binary: `agent-gateway demo` without the demo build tag, in the
// source checkout. That binary links no emulator; it must replace itself
// with `go run -tags demo . demo` and so start the real demo, which then
// answers on the address the user asked for.
func TestDemoReexec(t *testing.T) {
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	addr := gatewaytest.FreeAddr(t)
	cmd := exec.Command(gatewaytest.Binary(t), "demo", "--listen", addr)
	cmd.Dir = root
	// go run leaves an interrupt to its child, as a terminal's Ctrl-C
	// reaches the whole process group; the test stops the group alike.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncWriter
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		gatewaytest.StopCommand(cmd, 30*time.Second,
			func() { _ = syscall.Kill(-pid, syscall.SIGINT) },
			func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	})

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
	// The first run compiles the demo (go's build cache keeps it after).
	var url string
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("demo exited before printing its endpoints\n%s", stderr.String())
		}
		url = u
	case <-time.After(5 * time.Minute):
		t.Fatalf("no endpoints printed\n%s", stderr.String())
	}
	if !strings.Contains(url, addr) {
		t.Fatalf("endpoint %s, want one on %s", url, addr)
	}
	fj := gatewaytest.ConnectURL(t, url, "")
	if got := toolNames(t, fj); strings.Join(got, ",") != strings.Join(anonymousTools, ",") {
		t.Fatalf("re-executed demo tools/list = %v", got)
	}
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
