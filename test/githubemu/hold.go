package githubemu

import (
	"net/http"
	"sync"
)

// Hold stalls the first request to one path until the test releases it, so
// a test can change the gateway's configuration at a known point in the
// middle of a multi-request operation (for example revoke a source while a
// catalog dispatch waits for its last read). Faulted or not, the request
// is held before it is answered.
type Hold struct {
	path    string
	reached chan struct{}
	release chan struct{}
	once    sync.Once
	taken   bool // guarded by Emulator.mu
}

// HoldRequest holds the first request (after this call) whose unescaped
// URL path is path, e.g. "/repos/acme/agents/contents/docs/agents/skills.md".
// Later requests to the path are answered at once.
func (e *Emulator) HoldRequest(path string) *Hold {
	h := &Hold{path: path, reached: make(chan struct{}), release: make(chan struct{})}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holds = append(e.holds, h)
	return h
}

// Reached is closed when the held request has arrived and is waiting.
func (h *Hold) Reached() <-chan struct{} { return h.reached }

// Release lets the held request (or, if none came yet, the next one)
// through. It may be called more than once.
func (h *Hold) Release() { h.once.Do(func() { close(h.release) }) }

// waitHold blocks a request that matches a pending hold until the hold is
// released or the request is abandoned.
func (e *Emulator) waitHold(r *http.Request) {
	e.mu.Lock()
	var h *Hold
	for _, c := range e.holds {
		if !c.taken && c.path == r.URL.Path {
			h, c.taken = c, true
			break
		}
	}
	e.mu.Unlock()
	if h == nil {
		return
	}
	e.logf("githubemu: holding %s %s", r.Method, r.URL.Path)
	close(h.reached)
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
}

// releaseHolds lets every held request go, at Close.
func (e *Emulator) releaseHolds() {
	e.mu.Lock()
	holds := e.holds
	e.mu.Unlock()
	for _, h := range holds {
		h.Release()
	}
}
