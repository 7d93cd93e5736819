package forgejoemu

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// closeWait bounds how long Close waits for running routes.
const closeWait = 10 * time.Second

// Options configures an emulator.
type Options struct {
	// Dir is where the repositories live. Empty means a fresh temporary
	// directory, removed by Close; a given directory is left in place.
	Dir string
	// Logf, when set, receives one line per request and the server's own errors.
	Logf func(format string, args ...any)
	// Served, when set, is told each request and how long it took to
	// serve (emurecord.Timed).
	Served func(r *http.Request, d time.Duration)
	// Now, when set, is the clock for created/updated/closed times. The default
	// is deterministic: it starts at 2026-01-01T00:00:00Z and advances one
	// second per reading, so runs produce the same JSON.
	Now func() time.Time
}

// Emulator is a running Forgejo Core emulator on a loopback port.
type Emulator struct {
	opts     Options
	dir      string
	ownDir   bool
	home     string // HOME for git, so no user configuration leaks in
	origin   string
	ln       net.Listener
	srv      *http.Server
	served   chan struct{}
	done     chan struct{} // closed by Close; aborts sleeping faults
	inflight routeTracker  // routes still running

	closeOnce sync.Once
	closeErr  error

	mu sync.Mutex
	st state

	tplMu sync.Mutex // serializes creating the git init templates
}

// Start creates the emulator's directory and starts serving HTTP/1.1 on
// 127.0.0.1 at a free port.
func Start(opts Options) (*Emulator, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("forgejoemu: git is required: %w", err)
	}
	e := &Emulator{opts: opts, st: newState(), served: make(chan struct{}), done: make(chan struct{})}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "forgejoemu-")
		if err != nil {
			return nil, fmt.Errorf("forgejoemu: %w", err)
		}
		e.dir, e.ownDir = dir, true
	} else {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("forgejoemu: %w", err)
		}
		e.dir = opts.Dir
	}
	// Names cannot start with '.', so these never collide with an owner.
	e.home = filepath.Join(e.dir, ".home")
	if err := os.MkdirAll(filepath.Join(e.dir, ".tmp"), 0o755); err != nil {
		return nil, e.abort(err)
	}
	if err := os.MkdirAll(e.home, 0o755); err != nil {
		return nil, e.abort(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, e.abort(err)
	}
	e.ln = ln
	e.origin = "http://" + ln.Addr().String()
	e.srv = &http.Server{
		Handler:           e.handler(),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(logfWriter{e.logf}, "", 0),
	}
	go func() {
		defer close(e.served)
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.logf("forgejoemu: serve: %v", err)
		}
	}()
	return e, nil
}

// abort undoes a failed Start.
func (e *Emulator) abort(err error) error {
	if e.ownDir {
		_ = os.RemoveAll(e.dir)
	}
	return fmt.Errorf("forgejoemu: %w", err)
}

// URL returns the emulator's origin, "http://127.0.0.1:<port>", without a
// trailing slash. Forgejo's ROOT_URL is this plus "/".
func (e *Emulator) URL() string { return e.origin }

// Dir returns the directory the repositories live in.
func (e *Emulator) Dir() string { return e.dir }

// Close stops the server, closing open connections, and removes the
// directory if Start created it. It is safe to call more than once.
func (e *Emulator) Close() error {
	e.closeOnce.Do(func() {
		close(e.done)
		err := e.srv.Close()
		<-e.served
		// Closing connections does not stop handlers; wait (boundedly) so
		// none logs or touches the directory after Close returns.
		select {
		case <-e.inflight.close():
		case <-time.After(closeWait):
			e.logf("forgejoemu: Close: routes still running after %v", closeWait)
		}
		if e.ownDir {
			if rerr := os.RemoveAll(e.dir); rerr != nil && err == nil {
				err = rerr
			}
		}
		e.closeErr = err
	})
	return e.closeErr
}

func (e *Emulator) logf(format string, args ...any) {
	if e.opts.Logf != nil {
		e.opts.Logf(format, args...)
	}
}

// routeTracker counts running routes so Close can wait for them; once
// closed it admits no more.
type routeTracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{}
}

func (t *routeTracker) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *routeTracker) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// close admits no more routes and returns a channel closed when none runs.
func (t *routeTracker) close() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	ch := make(chan struct{})
	if t.n == 0 {
		close(ch)
	} else {
		t.idle = ch
	}
	return ch
}

// logfWriter adapts Logf to the io.Writer a log.Logger needs.
type logfWriter struct{ logf func(string, ...any) }

// Write logs p as one line.
func (w logfWriter) Write(p []byte) (int, error) {
	w.logf("%s", p)
	return len(p), nil
}

var _ io.Writer = logfWriter{}
