package forgejoemu

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"
	"strconv"
)

// errConnReset is what a route's Write returns after FaultReset cut the connection.
var errConnReset = errors.New("forgejoemu: connection reset by fault")

// faultWriter reshapes a route's answer for a fault. A route that declares
// Content-Length before its first write is streamed (so a huge body is not
// held in memory); any other answer, and every FaultGzip answer, is buffered
// and sent with an exact Content-Length when the route returns.
type faultWriter struct {
	e   *Emulator
	rw  http.ResponseWriter
	req *http.Request
	f   Fault

	status   int
	started  bool // the route called WriteHeader (or Write)
	emitted  bool // headers went to the client
	buffered bool
	buf      bytes.Buffer
	sent     int64 // body bytes sent to the client
	limit    int64 // FaultReset: body bytes to send before the reset
	dead     bool  // the connection is gone
}

func newFaultWriter(e *Emulator, rw http.ResponseWriter, r *http.Request, f Fault) *faultWriter {
	if f.ChunkBytes <= 0 {
		f.ChunkBytes = 64
		if f.Kind == FaultChunked {
			f.ChunkBytes = 1024
		}
	}
	return &faultWriter{e: e, rw: rw, req: r, f: f, limit: -1}
}

// Header returns the header map the answer will carry.
func (fw *faultWriter) Header() http.Header { return fw.rw.Header() }

// WriteHeader records the status and picks streaming or buffering.
func (fw *faultWriter) WriteHeader(status int) {
	if fw.started {
		return
	}
	fw.started, fw.status = true, status
	fw.buffered = fw.f.Kind == FaultGzip || fw.rw.Header().Get("Content-Length") == ""
	if !fw.buffered {
		fw.emit()
	}
}

// Write buffers or sends a piece of the body.
func (fw *faultWriter) Write(p []byte) (int, error) {
	if !fw.started {
		fw.WriteHeader(http.StatusOK)
	}
	if fw.dead {
		return 0, errConnReset
	}
	if fw.buffered {
		return fw.buf.Write(p)
	}
	return fw.send(p)
}

// Flush passes a streaming route's flush on; while buffering it does
// nothing, and the fault decides when bytes move.
func (fw *faultWriter) Flush() {
	if fw.emitted && !fw.buffered && !fw.dead {
		fw.flush()
	}
}

// finish sends a buffered answer once the route has returned.
func (fw *faultWriter) finish() {
	if !fw.started {
		fw.WriteHeader(http.StatusOK)
	}
	if !fw.buffered || fw.dead {
		return
	}
	body := fw.buf.Bytes()
	h := fw.rw.Header()
	if fw.f.Kind == FaultGzip {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = gz.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	fw.emit()
	_, _ = fw.send(body)
}

// emit applies the fault's headers and sends the status line and headers.
func (fw *faultWriter) emit() {
	if fw.emitted {
		return
	}
	fw.emitted = true
	h := fw.rw.Header()
	for k, v := range fw.f.Header {
		if len(v) == 0 {
			h.Del(k)
			continue
		}
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	if fw.f.Kind == FaultChunked {
		h.Del("Content-Length")
	}
	if fw.f.Kind == FaultReset {
		fw.limit = int64(fw.f.PartialBytes)
		if fw.limit <= 0 {
			n, _ := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
			fw.limit = n / 2
		}
	}
	fw.rw.WriteHeader(fw.status)
	if fw.limit == 0 {
		fw.reset()
	}
}

// send writes body bytes the way the fault wants them to travel.
func (fw *faultWriter) send(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if fw.dead {
			return written, errConnReset
		}
		n := len(p)
		switch fw.f.Kind {
		case FaultSlowBody, FaultChunked:
			n = min(n, fw.f.ChunkBytes)
		case FaultReset:
			n = int(min(int64(n), fw.limit-fw.sent))
		}
		m, err := fw.rw.Write(p[:n])
		written += m
		fw.sent += int64(m)
		p = p[m:]
		if err != nil {
			fw.dead = true
			return written, err
		}
		switch fw.f.Kind {
		case FaultSlowBody:
			fw.flush()
			if !fw.e.sleep(fw.req.Context(), fw.f.Delay) {
				// A test can see in the log that the client went away
				// (and when) rather than reading the whole trickle.
				fw.e.logf("forgejoemu: slow-body fault: the client went away after %d bytes", fw.sent)
				fw.dead = true
				return written, fw.req.Context().Err()
			}
		case FaultChunked:
			fw.flush()
		case FaultReset:
			if fw.sent >= fw.limit {
				fw.reset()
			}
		}
	}
	return written, nil
}

func (fw *faultWriter) flush() {
	if f, ok := fw.rw.(http.Flusher); ok {
		f.Flush()
	}
}

// reset pushes out what was written, then hijacks and closes the TCP
// connection, so the client sees the answer end before its Content-Length.
// It closes with FIN rather than SO_LINGER 0: an RST can make the client's
// kernel drop the partial body, which would make the fault nondeterministic.
func (fw *faultWriter) reset() {
	fw.dead = true
	fw.flush()
	hj, ok := fw.rw.(http.Hijacker)
	if !ok {
		return
	}
	conn, bufrw, err := hj.Hijack()
	if err != nil {
		fw.e.logf("forgejoemu: reset fault: hijack: %v", err)
		return
	}
	_ = bufrw.Flush()
	_ = conn.Close()
}
