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

// Requests returns every request seen since Start or ResetRequests, oldest first.
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
	e.st.requests = nil
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
		e.st.requests = append(e.st.requests, rec)
		e.mu.Unlock()
		e.logf("forgejoemu: %s %s", r.Method, r.URL.RequestURI())
		next.ServeHTTP(w, r)
	})
}
