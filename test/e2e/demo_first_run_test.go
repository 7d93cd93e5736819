package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// readmeFirstCommand returns the first command of the README's "Start
// here" block, without its comment.
func readmeFirstCommand(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Start here")
	if !ok {
		t.Fatal(`README.md has no "## Start here" section`)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatal(`README.md's "Start here" has no sh block`)
	}
	first, _, _ := strings.Cut(rest, "\n")
	cmd, _, _ := strings.Cut(first, "#")
	if cmd = strings.TrimSpace(cmd); cmd == "" {
		t.Fatal(`README.md's "Start here" block starts with no command`)
	}
	return cmd
}

// TestReadmeFirstCommandSpeaksFirst runs the README's first command as a
// newcomer does: in a fresh clone of the repository, with an empty Go
// build cache (the module cache stays shared: it holds sources, not
// compiled packages). Before any compile it must say what it is doing: its
// first line arrives while the demo build does not exist yet, and is the
// progress line. The test stops it there instead of waiting minutes for
// the compile. `go run . demo` printed nothing for the whole compile.
func TestReadmeFirstCommandSpeaksFirst(t *testing.T) {
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (CI=true): %v", tool, err)
			}
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	command := readmeFirstCommand(t, root)
	clone := filepath.Join(t.TempDir(), "agent-gateway")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(clone, "bin")); !os.IsNotExist(err) {
		t.Fatalf("a fresh clone has bin/ already (%v)", err)
	}

	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = clone
	// A reader types the command in a fresh shell, not inside make: under
	// `make test` the inherited MAKELEVEL and MAKEFLAGS make the inner make
	// print "Entering directory" first, which no reader would see.
	var env []string
	for _, kv := range gatewaytest.CleanEnv() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKELEVEL" && k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKEOVERRIDES" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GOCACHE="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "GOFLAGS=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
		// The group: sh, make and the go build it started.
		gatewaytest.StopCommand(cmd, 10*time.Second,
			func() { _ = syscall.Kill(-pid, syscall.SIGINT) },
			func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
	}()
	var line string
	select {
	case l, ok := <-first:
		if !ok {
			t.Fatalf("%s printed nothing and closed its output\n%s", command, stderr.String())
		}
		line = l
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s printed nothing for 2 minutes from a fresh clone\n%s", command, stderr.String())
	}
	bins, _ := filepath.Glob(filepath.Join(clone, "bin", "*"))
	if len(bins) > 0 {
		t.Fatalf("the first line came after the build: %v exists", bins)
	}
	if !strings.HasPrefix(line, "compiling the demo build (first run only") {
		t.Fatalf("the first line of %s is %q, want the progress line\n%s", command, line, stderr.String())
	}
}
