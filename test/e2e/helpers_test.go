package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// requireRedis skips when the test Redis is unreachable, except in CI.
func requireRedis(t *testing.T) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:6379", 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is required in CI: %v", err)
		}
		t.Skipf("Redis unreachable: %v", err)
	}
	c.Close()
}

// syncWriter is a bytes.Buffer safe for a process's concurrent writes and
// the test's reads.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// runCommand runs cmd to its end and returns its exit code, stdout and
// stderr; failing to start it at all fails the test.
func runCommand(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errs.String()
}

// requireLines fails t once for each of wants that report does not
// contain, showing the report: a configuration report must name every
// mistake at once.
func requireLines(t *testing.T, report string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// exitCode is the exit code of a command that ran to its end: 0 for a nil
// err, the code of an *exec.ExitError; any other error (it did not start,
// or its output could not be copied) fails the test.
func exitCode(t testing.TB, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}
