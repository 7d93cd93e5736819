package gatewaytest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTiedToParent: a process started with TiedToParent dies when the
// process that started it is killed with SIGKILL, which no cleanup of the
// parent's can handle.
func TestTiedToParent(t *testing.T) {
	if os.Getenv("GATEWAYTEST_TIED_PARENT") == "1" {
		child := exec.Command("sleep", "120")
		TiedToParent(child)
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(2 * time.Minute)
		return
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestTiedToParent$")
	parent.Env = append(os.Environ(), "GATEWAYTEST_TIED_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		_ = parent.Process.Kill()
		t.Fatalf("the parent's child pid: %q, %v", line, err)
	}
	if !alive(pid) {
		t.Fatalf("the child %d is not running before its parent dies", pid)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the child %d still runs 10 s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs: it exists and is not a zombie waiting
// for a reaper.
func alive(pid int) bool {
	f := procStat(pid)
	return len(f) > 0 && f[0] != "Z"
}
