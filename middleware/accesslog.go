package middleware

import (
	"log/slog"
	"net/http"
	"time"
)

// AccessLog writes one JSON line per request, of bounded size whatever the
// caller sent. It logs only values the gateway chose or bounded: method, route path, status, size, duration, the
// request ID, the peeked JSON-RPC method and tool, the outcome code, the
// client address and the hashed caller key. It never logs headers, so
// Authorization, cookies and tokens cannot reach the log, and never bodies.
func AccessLog(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			rec := RecordFromContext(r.Context())
			call := rec.Call()
			// Values the caller chose (HTTP method, path, JSON-RPC method,
			// tool) are capped at MaxLoggedField bytes plus their length.
			attrs := make([]slog.Attr, 0, 16)
			attrs = append(attrs, slog.String("request_id", rec.RequestID()))
			attrs = append(attrs, CappedString("method", r.Method, MaxLoggedField)...)
			attrs = append(attrs, CappedString("path", r.URL.Path, MaxLoggedField)...)
			attrs = append(attrs,
				slog.Int("status", sw.Status()),
				slog.Int64("bytes", sw.written),
				slog.Duration("duration", time.Since(start)),
				slog.String("client_ip", rec.ClientIP()),
				slog.String("caller", rec.Caller()),
			)
			attrs = append(attrs, CappedString("rpc_method", call.Method, MaxLoggedField)...)
			attrs = append(attrs, CappedString("tool", call.Tool, MaxLoggedField)...)
			attrs = append(attrs, slog.String("outcome", rec.Outcome()))
			log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		})
	}
}

// statusWriter remembers the status and size written through it.
type statusWriter struct {
	http.ResponseWriter
	status  int
	written int64
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.written += int64(n)
	return n, err
}

// Status is the status of the response once the handler has returned: the
// one written, or 200 when the handler wrote nothing (net/http then sends
// 200 itself, so logs and metrics must not report 0).
func (s *statusWriter) Status() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush forwards flushes (streamed responses).
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
