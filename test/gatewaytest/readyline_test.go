package gatewaytest

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func TestReadyLine(t *testing.T) {
	t.Run("the first line, without its newline", func(t *testing.T) {
		line, err := ReadyLine(io.NopCloser(strings.NewReader("http://127.0.0.1:1\nmore\n")), 256, time.Minute)
		if err != nil || string(line) != "http://127.0.0.1:1" {
			t.Fatalf("got %q, %v", line, err)
		}
	})
	t.Run("a process that exits before a whole line", func(t *testing.T) {
		line, err := ReadyLine(io.NopCloser(strings.NewReader("http://127.0")), 256, time.Minute)
		if err == nil || !strings.Contains(err.Error(), `"http://127.0"`) {
			t.Fatalf("got %q, %v; want an error quoting what came", line, err)
		}
	})
	t.Run("a line longer than the limit", func(t *testing.T) {
		if line, err := ReadyLine(io.NopCloser(strings.NewReader(strings.Repeat("x", 300)+"\n")), 256, time.Minute); err == nil {
			t.Fatalf("got %q, want an error", line)
		}
	})
	t.Run("a silent process", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		if line, err := ReadyLine(r, 256, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "within 50ms") {
			t.Fatalf("got %q, %v; want a timeout", line, err)
		}
	})
	t.Run("what follows the line is drained", func(t *testing.T) {
		r, w := io.Pipe()
		go func() { _, _ = w.Write([]byte("ready\n")) }()
		line, err := ReadyLine(r, 256, time.Minute)
		if err != nil || string(line) != "ready" {
			t.Fatalf("got %q, %v", line, err)
		}
		// An io.Pipe write blocks until it is read: this one returns only
		// because the rest is read and dropped.
		done := make(chan error, 1)
		go func() { _, err := w.Write(bytes.Repeat([]byte("log line\n"), 1<<16)); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a write after the ready line blocked")
		}
		w.Close()
	})
	t.Run("stdout is closed at its end", func(t *testing.T) {
		r := &closeRecorder{Reader: strings.NewReader("ready\nlast words\n"), closed: make(chan struct{})}
		if _, err := ReadyLine(r, 256, time.Minute); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.closed:
		case <-time.After(time.Minute):
			t.Fatal("stdout was not closed after its end")
		}
	})
}

// closeRecorder is a reader whose Close closes a channel.
type closeRecorder struct {
	io.Reader
	closed chan struct{}
}

func (c *closeRecorder) Close() error { close(c.closed); return nil }
