package e2e

import (
	"bytes"
	"os/exec"
	"testing"
	"time"
)

// runBounded runs cmd to its end and returns its output and exit error (nil for 0),
// killing it and failing t when it has not exited within
// limit: a command that should exit at once must not hang a test. A child
// that keeps the output open (a go build it started) holds it at most
// five seconds past the exit.
func runBounded(t *testing.T, cmd *exec.Cmd, limit time.Duration) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not exit within %v\nstdout:\n%s\nstderr:\n%s", cmd.Args, limit, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), err
}
