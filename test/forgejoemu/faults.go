package forgejoemu

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FaultKind selects how a faulted route misbehaves.
type FaultKind int

// The fault kinds. Each is observable with a plain http.Client.
const (
	// FaultNone behaves normally (apart from Fault.Header, if set).
	FaultNone FaultKind = iota
	// FaultRedirect answers 302 Found with a Location elsewhere (Fault.Location,
	// default the same origin under /__redirected, so a client that follows it
	// shows up in Requests and gets a 404).
	FaultRedirect
	// FaultGzip gzips the normal body and sets Content-Encoding: gzip and the
	// compressed Content-Length, whatever the request's Accept-Encoding.
	FaultGzip
	// FaultSlow sleeps Fault.Delay before the route runs and headers are sent.
	FaultSlow
	// FaultSlowBody sends headers at once, then the body in chunks of
	// Fault.ChunkBytes (default 64) with Fault.Delay after each.
	FaultSlowBody
	// FaultReset sends headers (with the full Content-Length) and
	// Fault.PartialBytes of the body (default half), then hijacks the TCP
	// connection and closes it: the client reads a truncated body and gets
	// io.ErrUnexpectedEOF (or a reset error).
	FaultReset
	// FaultStatus answers Fault.Status (default 500) with Fault.Body, or
	// Forgejo's {"message","url"} error body, without running the route.
	FaultStatus
	// FaultChunked drops Content-Length and sends the body with chunked
	// transfer encoding, in chunks of Fault.ChunkBytes (default 1024).
	FaultChunked
	// FaultHeaders serves normally but applies Fault.Header to the answer
	// (a thousand Via values, say: Header{"Via": …}).
	FaultHeaders
	// FaultExtraBytes serves the answer with its exact Content-Length, then
	// sends Fault.Body on the same connection as if it were more of it, and
	// closes the connection.
	FaultExtraBytes
	// FaultEndlessHeaders answers with a status line and then header lines
	// for as long as the client reads them, without running the route.
	FaultEndlessHeaders
)

var faultNames = [...]string{"none", "redirect", "gzip", "slow", "slow-body", "reset", "status", "chunked", "headers", "extra-bytes", "endless-headers"}

// String names the kind.
func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is a misbehaviour switched on for a route prefix.
type Fault struct {
	// Kind selects the misbehaviour.
	Kind FaultKind
	// Delay is the pause for FaultSlow (before headers) and FaultSlowBody
	// (after each chunk).
	Delay time.Duration
	// Status is FaultStatus's status code; default 500.
	Status int
	// Body replaces FaultStatus's JSON error body; for FaultExtraBytes it
	// is what follows the answer.
	Body []byte
	// Location is FaultRedirect's target.
	Location string
	// ChunkBytes is the chunk size of FaultSlowBody and FaultChunked.
	ChunkBytes int
	// PartialBytes is how much body FaultReset sends; 0 means half.
	PartialBytes int
	// Header is applied to the answer of any kind except FaultRedirect and
	// FaultReset's missing part: each key is set to its values, and a key
	// with no values is deleted (e.g. Content-Type: nil).
	Header http.Header
	// Times limits the fault to that many requests, after which it clears
	// itself; 0 means until cleared.
	Times int
}

// faultEntry is a Fault with its remaining uses.
type faultEntry struct {
	fault Fault
	left  int // remaining uses when fault.Times > 0
}

// SetFault switches a fault on for every request whose path starts with
// routePrefix ("" for all routes), replacing any fault on that prefix. When
// several prefixes match, the longest wins. FaultNone with no Header clears it.
func (e *Emulator) SetFault(routePrefix string, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if f.Kind == FaultNone && f.Header == nil {
		delete(e.st.faults, routePrefix)
		return
	}
	f.Header = f.Header.Clone()
	f.Body = append([]byte(nil), f.Body...)
	e.st.faults[routePrefix] = &faultEntry{fault: f, left: f.Times}
}

// ClearFaults switches every fault off.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.faults = map[string]*faultEntry{}
}

// takeFault returns the fault for a path, consuming one use.
func (e *Emulator) takeFault(path string) (Fault, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	best, found := "", false
	for prefix := range e.st.faults {
		if strings.HasPrefix(path, prefix) && (!found || len(prefix) > len(best)) {
			best, found = prefix, true
		}
	}
	if !found {
		return Fault{}, false
	}
	entry := e.st.faults[best]
	if entry.fault.Times > 0 {
		entry.left--
		if entry.left <= 0 {
			delete(e.st.faults, best)
		}
	}
	return entry.fault, true
}

// applyFaults runs the route through the fault of its path, if any.
func (e *Emulator) applyFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := e.takeFault(r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		e.logf("forgejoemu: fault %s on %s %s", f.Kind, r.Method, r.URL.Path)
		switch f.Kind {
		case FaultRedirect:
			loc := f.Location
			if loc == "" {
				loc = e.origin + "/__redirected" + r.URL.RequestURI()
			}
			http.Redirect(w, r, loc, http.StatusFound)
			return
		case FaultStatus:
			status := f.Status
			if status == 0 {
				status = http.StatusInternalServerError
			}
			fw := newFaultWriter(e, w, r, f)
			if f.Body != nil {
				fw.Header().Set("Content-Length", strconv.Itoa(len(f.Body)))
				fw.WriteHeader(status)
				_, _ = fw.Write(f.Body)
			} else {
				e.writeError(fw, status, http.StatusText(status))
			}
			fw.finish()
			return
		case FaultSlow:
			if !e.sleep(r.Context(), f.Delay) {
				return
			}
		case FaultEndlessHeaders:
			e.endlessHeaders(w)
			return
		}
		fw := newFaultWriter(e, w, r, f)
		next.ServeHTTP(fw, r)
		fw.finish()
		if f.Kind == FaultExtraBytes {
			e.sendExtra(w, f.Body)
		}
	})
}

// sendExtra writes extra after a complete answer, on the raw connection
// (net/http would refuse bytes past Content-Length), then closes it.
func (e *Emulator) sendExtra(w http.ResponseWriter, extra []byte) {
	rc := http.NewResponseController(w)
	// Hijack flushes only what reached the connection's buffer, not the
	// response's own: flush first, or the answer's tail would be lost.
	if err := rc.Flush(); err != nil {
		e.logf("forgejoemu: extra-bytes fault: flush: %v", err)
		return
	}
	conn, bufrw, err := rc.Hijack()
	if err != nil {
		e.logf("forgejoemu: extra-bytes fault: hijack: %v", err)
		return
	}
	defer conn.Close()
	_ = bufrw.Flush()
	_, _ = conn.Write(extra)
	// Give the client time to read the surplus as part of this exchange.
	e.sleep(context.Background(), 200*time.Millisecond)
}

// endlessHeaders sends a status line and header lines until the client
// stops reading or the emulator closes.
func (e *Emulator) endlessHeaders(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		e.logf("forgejoemu: endless-headers fault: hijack: %v", err)
		return
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json;charset=utf-8\r\n")
	line := "X-Padding-%d: " + strings.Repeat("a", 1000) + "\r\n"
	for i := 0; ; i++ {
		select {
		case <-e.done:
			return
		default:
		}
		_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, line, i); err != nil {
			return
		}
	}
}

// sleep waits d unless the request or the emulator ends first.
func (e *Emulator) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-e.done:
		return false
	}
}
