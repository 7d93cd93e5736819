package forgejoemu

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxRecordedBody bounds the request body kept per recorded request; the
// handler still reads the whole body.
const maxRecordedBody = 2 << 20

// The request record is a bounded ring: the newest requests, at most
// maxRecordedRequests of them holding at most maxRecordedBodyBytes of
// bodies. The demo runs this emulator for as long as a person leaves it
// up, and a record of every request, headers included, grew without end
// (≈ 0.45 GB an hour under load); tests read far fewer requests than it
// keeps.
const (
	maxRecordedRequests  = 10000
	maxRecordedBodyBytes = 64 << 20
)

// Recorded is one request as the emulator received it.
type Recorded struct {
	// Method is the HTTP method.
	Method string
	// Path is the escaped path, as sent (r.URL.EscapedPath()).
	Path string
	// RawQuery is the query string as sent, without '?'.
	RawQuery string
	// Query is RawQuery parsed.
	Query url.Values
	// Header is a clone of the request headers, so a test can assert e.g.
	// that no Authorization header was sent.
	Header http.Header
	// Body is the request body, up to 2 MiB.
	Body []byte
	// BodyTruncated reports a body longer than what Body holds.
	BodyTruncated bool
	// At is when the request arrived (wall clock).
	At time.Time
}

// Requests returns the requests seen since Start or ResetRequests, oldest
// first: every one, up to the record's bound (the newest
// maxRecordedRequests, within maxRecordedBodyBytes of bodies).
func (e *Emulator) Requests() []Recorded {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Recorded, len(e.st.requests))
	for i, r := range e.st.requests {
		r.Header = r.Header.Clone()
		r.Query = cloneValues(r.Query)
		r.Body = append([]byte(nil), r.Body...)
		out[i] = r
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// ResetRequests forgets the recorded requests.
func (e *Emulator) ResetRequests() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.requests, e.st.recordedBodyBytes = nil, 0
}

// keepRequest adds rec to the record and drops the oldest requests while
// it is over its bounds: at least a tenth of the record at a time, so each
// request is copied a bounded number of times, and never rec itself.
func (st *state) keepRequest(rec Recorded) {
	st.requests = append(st.requests, rec)
	st.recordedBodyBytes += len(rec.Body)
	if len(st.requests) <= maxRecordedRequests && st.recordedBodyBytes <= maxRecordedBodyBytes {
		return
	}
	drop, dropped := 0, 0
	for drop < len(st.requests)-1 && (drop < max(1, maxRecordedRequests/10) || st.recordedBodyBytes-dropped > maxRecordedBodyBytes) {
		dropped += len(st.requests[drop].Body)
		drop++
	}
	n := copy(st.requests, st.requests[drop:])
	clear(st.requests[n:])
	st.requests = st.requests[:n]
	st.recordedBodyBytes -= dropped
}

// recordRequests records the request before anything else handles it; the
// body is read up to the bound and put back in front of the rest.
func (e *Emulator) recordRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.inflight.enter() {
			http.Error(w, "emulator closed", http.StatusServiceUnavailable)
			return
		}
		defer e.inflight.leave()
		rec := Recorded{
			Method:   r.Method,
			Path:     r.URL.EscapedPath(),
			RawQuery: r.URL.RawQuery,
			Query:    r.URL.Query(),
			Header:   r.Header.Clone(),
			At:       time.Now(),
		}
		if r.Body != nil && r.Body != http.NoBody {
			head, err := io.ReadAll(io.LimitReader(r.Body, maxRecordedBody+1))
			if err == nil || len(head) > 0 {
				rec.Body = head[:min(len(head), maxRecordedBody)]
				rec.BodyTruncated = len(head) > maxRecordedBody
				r.Body = struct {
					io.Reader
					io.Closer
				}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
			}
		}
		e.mu.Lock()
		e.st.keepRequest(rec)
		e.mu.Unlock()
		e.logf("forgejoemu: %s %s", r.Method, r.URL.RequestURI())
		next.ServeHTTP(w, r)
	})
}
