package githubemu

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"
)

// HugeBodyBytes is the size of FaultHugeBody's answer: one byte over the
// gateway's 1,500,000-byte bound on a Contents response.
const HugeBodyBytes = 1_500_001

// FaultKind selects how a faulted route misbehaves.
type FaultKind int

// The fault kinds.
const (
	// FaultRedirect answers 302 with Fault.Location (default: this origin
	// under /__redirected, so a client that follows it shows up in Requests).
	FaultRedirect FaultKind = iota + 1
	// FaultStatus answers Fault.Status (default 500) with Fault.Header and
	// Fault.Body (default GitHub's {"message":…} body). Status 200 with a
	// Body injects any Contents answer.
	FaultStatus
	// FaultHugeBody answers 200 with a JSON-looking body of Fault.Size bytes
	// (default HugeBodyBytes) and a truthful Content-Length.
	FaultHugeBody
	// FaultHugeBodyChunked is FaultHugeBody without Content-Length: the body
	// is sent with chunked transfer encoding.
	FaultHugeBodyChunked
	// FaultFalseLength declares Content-Length: Fault.DeclaredLength but
	// sends a body of Fault.Size bytes (default HugeBodyBytes) over the raw
	// connection, then closes it.
	FaultFalseLength
	// FaultMalformedJSON answers 200 with a truncated JSON object.
	FaultMalformedJSON
	// FaultGzip answers 200 with a gzip body and Content-Encoding: gzip.
	FaultGzip
	// FaultHeaders serves the route normally with Fault.Header added to its
	// answer (a thousand Via values, say).
	FaultHeaders
	// FaultExtraBytes serves the route's answer with its exact
	// Content-Length, then sends Fault.Body on the same connection, and
	// closes it.
	FaultExtraBytes
	// FaultEndlessHeaders answers with a status line and then header lines
	// for as long as the client reads them.
	FaultEndlessHeaders
	// FaultStallBody sends the route's headers and half its body, then
	// nothing more until the client gives up.
	FaultStallBody
	// FaultReset sends the route's headers and half its body, then resets
	// the connection (TCP RST).
	FaultReset
	// FaultTrickle sends the route's headers (with its true Content-Length)
	// and then its body one byte every Fault.Interval (default 3 s), for as
	// long as the client keeps the connection: each read makes progress, so
	// no per-read timeout ever cuts it. Trickling counts the answers still
	// being sent.
	FaultTrickle
)

// Fault is a misbehaviour of one route.
type Fault struct {
	Kind           FaultKind
	Status         int
	Header         http.Header
	Body           []byte
	Location       string
	Size           int
	DeclaredLength int
	// Interval is FaultTrickle's pause between bytes.
	Interval time.Duration
	// Times limits the fault to that many requests; 0 means until cleared.
	Times int
}

type faultEntry struct {
	fault Fault
	left  int
}

// SetFault switches a fault on for a route, replacing any other.
func (e *Emulator) SetFault(route Route, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f.Header = f.Header.Clone()
	f.Body = bytes.Clone(f.Body)
	e.faults[route] = &faultEntry{fault: f, left: f.Times}
}

// ClearFaults switches every fault off.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = map[Route]*faultEntry{}
}

func (e *Emulator) takeFault(route Route) (Fault, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	entry, ok := e.faults[route]
	if !ok {
		return Fault{}, false
	}
	if entry.fault.Times > 0 {
		entry.left--
		if entry.left <= 0 {
			delete(e.faults, route)
		}
	}
	return entry.fault, true
}

// hugeBody is a body that starts like a Contents answer and never ends
// within its size: {"type":"file",…,"content":"AAAA…"}.
func hugeBody(size int) []byte {
	head := `{"type":"file","encoding":"base64","size":1,"path":"x","content":"`
	if size < len(head)+2 {
		size = len(head) + 2
	}
	b := make([]byte, size)
	copy(b, head)
	for i := len(head); i < size-2; i++ {
		b[i] = 'A'
	}
	copy(b[size-2:], `"}`)
	return b
}

func (e *Emulator) serveFault(w http.ResponseWriter, r *http.Request, f Fault, route http.Handler) {
	e.logf("githubemu: fault %d on %s %s", f.Kind, r.Method, r.URL.Path)
	switch f.Kind {
	case FaultHeaders, FaultExtraBytes, FaultEndlessHeaders, FaultStallBody, FaultReset, FaultTrickle:
		e.serveRawFault(w, r, f, route)
		return
	}
	for k, vs := range f.Header {
		w.Header()[k] = vs
	}
	size := f.Size
	if size == 0 {
		size = HugeBodyBytes
	}
	switch f.Kind {
	case FaultRedirect:
		loc := f.Location
		if loc == "" {
			loc = e.origin + "/__redirected" + r.URL.RequestURI()
		}
		http.Redirect(w, r, loc, http.StatusFound)
	case FaultStatus:
		status := f.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		if f.Body == nil {
			if f.Header.Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
			}
			body := fmt.Sprintf(`{"message":%q,"documentation_url":"https://docs.github.com/rest","status":"%d"}`, http.StatusText(status), status)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
			return
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Body)))
		w.WriteHeader(status)
		_, _ = w.Write(f.Body)
	case FaultHugeBody:
		body := hugeBody(size)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	case FaultHugeBodyChunked:
		body := hugeBody(size)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for len(body) > 0 {
			n := min(len(body), 32<<10)
			if _, err := w.Write(body[:n]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			body = body[n:]
		}
	case FaultFalseLength:
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		e.writeRaw(buf, f.DeclaredLength, hugeBody(size))
	case FaultMalformedJSON:
		body := `{"type":"file","encoding":"base64","size":12,"path":`
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(body))
	case FaultGzip:
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write([]byte(`{"type":"file","encoding":"base64","size":0,"path":"x","content":""}`))
		_ = zw.Close()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(zb.Len()))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(zb.Bytes())
	default:
		writeMessage(w, http.StatusInternalServerError, "unknown fault")
	}
}

// serveRawFault runs the route into a recorder and sends its answer over
// the raw connection the way the fault wants it.
func (e *Emulator) serveRawFault(w http.ResponseWriter, r *http.Request, f Fault, route http.Handler) {
	rec := httptest.NewRecorder()
	if f.Kind != FaultEndlessHeaders {
		route.ServeHTTP(rec, r)
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-e.done:
			conn.Close()
		case <-stop:
		}
	}()
	if f.Kind == FaultEndlessHeaders {
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n")
		line := "X-Padding-%d: " + strings.Repeat("a", 1000) + "\r\n"
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(buf, line, i); err != nil || buf.Flush() != nil {
				return
			}
		}
	}
	res := rec.Result()
	body := rec.Body.Bytes()
	var h strings.Builder
	fmt.Fprintf(&h, "HTTP/1.1 %d %s\r\n", res.StatusCode, http.StatusText(res.StatusCode))
	res.Header.Set("Content-Length", strconv.Itoa(len(body)))
	for k, vs := range f.Header {
		if f.Kind == FaultHeaders {
			res.Header[k] = append(res.Header[k], vs...)
		}
	}
	_ = res.Header.Write(&h)
	h.WriteString("\r\n")
	_, _ = buf.WriteString(h.String())
	switch f.Kind {
	case FaultHeaders:
		_, _ = buf.Write(body)
	case FaultExtraBytes:
		_, _ = buf.Write(body)
		_, _ = buf.Write(f.Body)
		_ = buf.Flush()
		// Let the client read the surplus as part of this exchange.
		select {
		case <-time.After(200 * time.Millisecond):
		case <-e.done:
		}
	case FaultStallBody:
		_, _ = buf.Write(body[:len(body)/2])
		_ = buf.Flush()
		_, _ = io.Copy(io.Discard, conn) // until the client gives up
	case FaultTrickle:
		_ = buf.Flush()
		e.trickle(conn, body, f.Interval)
	case FaultReset:
		_, _ = buf.Write(body[:len(body)/2])
		_ = buf.Flush()
		time.Sleep(20 * time.Millisecond)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	_ = buf.Flush()
}

// writeRaw writes a response whose Content-Length lies about its body.
func (e *Emulator) writeRaw(buf *bufio.ReadWriter, declared int, body []byte) {
	var h strings.Builder
	h.WriteString("HTTP/1.1 200 OK\r\n")
	h.WriteString("Content-Type: application/json; charset=utf-8\r\n")
	h.WriteString("Content-Length: " + strconv.Itoa(declared) + "\r\n")
	h.WriteString("Connection: close\r\n\r\n")
	_, _ = buf.WriteString(h.String())
	_, _ = buf.Write(body)
	_ = buf.Flush()
}

// trickle writes body one byte per interval until it is all sent, the
// client closes the connection or the emulator closes.
func (e *Emulator) trickle(conn net.Conn, body []byte, interval time.Duration) {
	if interval <= 0 {
		interval = 3 * time.Second
	}
	e.mu.Lock()
	e.trickling++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.trickling--
		e.mu.Unlock()
	}()
	// A client that hangs up is seen by a read as soon as it happens, not
	// only at the next write.
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, conn)
		close(gone)
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := range body {
		if _, err := conn.Write(body[i : i+1]); err != nil {
			return
		}
		select {
		case <-tick.C:
		case <-gone:
			e.logf("githubemu: trickle fault: the client went away after %d bytes", i+1)
			return
		case <-e.done:
			return
		}
	}
}

// Trickling is the number of FaultTrickle answers still being sent: each
// holds one connection the client has not closed.
func (e *Emulator) Trickling() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.trickling
}
