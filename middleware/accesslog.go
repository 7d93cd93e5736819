package middleware

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Access-line bounds per client address (AccessLog): a client may cause
// AccessLinesBurst lines at once and AccessLinesPerSecond lines a second
// after that; past it its lines are counted, not written, and the next
// line written for it says how many were left out. An HTTP/2 client that
// opened and reset 394,630 streams in 20 s once wrote 72.6 MB of access
// log (13 GB an hour); bounded, one address writes at most about 100 lines
// (20 KB) a second.
const (
	AccessLinesPerSecond = 100
	AccessLinesBurst     = 1000
	// maxLogKeys bounds the addresses the access-line bound tracks; past
	// it, the addresses not tracked share one bucket.
	maxLogKeys = 8192
)

// AccessLog writes one JSON line per request, of bounded size whatever the
// caller sent. It logs only values the gateway chose or bounded: method, route path, status, size, duration, the
// request ID, the peeked JSON-RPC method and tool, the outcome code, whether
// the gateway's own tools/call path answered (served_by), the client address and the hashed caller key. It never logs headers, so
// Authorization, cookies and tokens cannot reach the log, and never bodies.
//
// Lines are bounded per client address (AccessLinesPerSecond,
// AccessLinesBurst): a line left out is counted, and the next line of that
// address carries the count as suppressed_lines.
func AccessLog(log *slog.Logger) func(http.Handler) http.Handler {
	lines := newLineBudget(AccessLinesPerSecond, AccessLinesBurst, maxLogKeys, time.Now)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			rec := RecordFromContext(r.Context())
			suppressed, ok := lines.take(rec.ClientKey())
			if !ok {
				return
			}
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
			if rec.Owned() {
				// Which path answered a call: when a client sees a
				// difference, this says whose answer it was.
				attrs = append(attrs, slog.String("served_by", "gateway"))
			}
			if suppressed > 0 {
				attrs = append(attrs, slog.Int64("suppressed_lines", suppressed))
			}
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

// lineBudget is a token bucket of log lines per key, bounded in keys.
type lineBudget struct {
	rate, burst float64
	maxKeys     int
	now         func() time.Time
	mu          sync.Mutex
	keys        map[string]*lineBucket
	pruned      time.Time
}

type lineBucket struct {
	tokens     float64
	last       time.Time
	suppressed int64
}

// overflowKey is the shared bucket of addresses past maxKeys.
const overflowKey = "\x00overflow"

func newLineBudget(rate, burst float64, maxKeys int, now func() time.Time) *lineBudget {
	return &lineBudget{rate: rate, burst: burst, maxKeys: maxKeys, now: now, keys: map[string]*lineBucket{}}
}

// take spends one line of key's budget. ok says whether the line may be
// written; suppressed is how many of key's lines were left out since its
// last written one (reported once).
func (b *lineBudget) take(key string) (suppressed int64, ok bool) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	k, found := b.keys[key]
	if !found {
		if len(b.keys) >= b.maxKeys && now.Sub(b.pruned) >= time.Second {
			// At most once a second: a flood of new addresses must not
			// make every line scan the whole map.
			b.pruned = now
			b.pruneLocked(now)
		}
		if len(b.keys) >= b.maxKeys {
			key = overflowKey
			k = b.keys[key]
		}
		if k == nil {
			k = &lineBucket{tokens: b.burst, last: now}
			b.keys[key] = k
		}
	}
	k.tokens = min(b.burst, k.tokens+now.Sub(k.last).Seconds()*b.rate)
	k.last = now
	if k.tokens < 1 {
		k.suppressed++
		return 0, false
	}
	k.tokens--
	suppressed, k.suppressed = k.suppressed, 0
	return suppressed, true
}

// pruneLocked drops the buckets that have refilled and owe no report:
// they are the same as absent ones.
func (b *lineBudget) pruneLocked(now time.Time) {
	for key, k := range b.keys {
		if k.suppressed == 0 && k.tokens+now.Sub(k.last).Seconds()*b.rate >= b.burst {
			delete(b.keys, key)
		}
	}
}
