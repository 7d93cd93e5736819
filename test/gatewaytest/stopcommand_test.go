package gatewaytest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestStopCommand: a process that heeds stop is not killed; one that
// ignores it is killed after the grace; either way Wait has returned.
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
	t.Run("ignores stop", func(t *testing.T) {
		cmd := start(t)
		StopCommand(cmd, 50*time.Millisecond, func() {}, nil)
		if cmd.ProcessState == nil || cmd.ProcessState.String() != "signal: killed" {
			t.Fatalf("state %v, want killed", cmd.ProcessState)
		}
	})
}
