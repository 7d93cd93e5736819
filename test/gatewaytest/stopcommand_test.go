package gatewaytest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestStopCommand: a process that heeds stop is not killed; one that
// ignores it is killed after the grace; one that exits early is seen by
// Exited and not killed; either way Wait has returned.
func TestStopCommand(t *testing.T) {
	start := func(t *testing.T) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	t.Run("heeds stop", func(t *testing.T) {
		cmd := start(t)
		killed := false
		StopCommand(cmd, time.Minute, func() { _ = cmd.Process.Signal(os.Interrupt) }, func() { killed = true })
		if killed || cmd.ProcessState == nil {
			t.Fatalf("killed %v, state %v", killed, cmd.ProcessState)
		}
	})
	t.Run("exits by itself", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", "exit 3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := Exited(cmd)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Fatal("Exited did not see the exit")
		}
		killed := false
		StopExited(cmd, exited, time.Minute, func() {}, func() { killed = true })
		if killed || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
			t.Fatalf("killed %v, state %v", killed, cmd.ProcessState)
		}
	})
	t.Run("ignores stop", func(t *testing.T) {
		cmd := start(t)
		StopCommand(cmd, 50*time.Millisecond, func() {}, nil)
		if cmd.ProcessState == nil || cmd.ProcessState.String() != "signal: killed" {
			t.Fatalf("state %v, want killed", cmd.ProcessState)
		}
	})
}
