package middleware

import (
	"net/http"
	"time"
)

// WriteDeadline turns the server's write timeout from a deadline on the
// whole response into one on each write (no page deadline:
// docs/architecture.md#operations). net/http arms WriteTimeout when a
// request's headers have been read, so it covers the handler too: a diff
// page, which verifies the whole diff before it writes a byte, was cut after
// it and the client saw the connection close with no code. Here the deadline
// is cleared when the handler starts, and each write — and the final flush
// after the handler returns — gets d from its own start: a client that
// stops reading is still cut off after d, a handler that works as long as
// its upstream makes progress is not. The upstream side bounds that work
// with its own per-read timeout.
//
// A writer whose deadline cannot be changed keeps the server's.
func WriteDeadline(d time.Duration) func(http.Handler) http.Handler {
	if d <= 0 {
		panic("middleware.WriteDeadline: the per-write timeout must be positive")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			if err := rc.SetWriteDeadline(time.Time{}); err != nil {
				next.ServeHTTP(w, r)
				return
			}
			dw := &deadlineWriter{ResponseWriter: w, rc: rc, d: d}
			next.ServeHTTP(dw, r)
			// What the handler left buffered is flushed by net/http after
			// this returns: give that its own deadline too.
			dw.arm()
		})
	}
}

// deadlineWriter sets the write deadline before every write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher for handlers that stream.
func (w *deadlineWriter) Flush() {
	w.arm()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
