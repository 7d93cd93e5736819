package forgejoemu

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
)

// maxRecordedBody bounds the request body kept per recorded request; the
// handler still reads the whole body. The record as a whole is an
// emurecord.Ring, within that package's bounds.
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

// Requests returns the requests seen since Start or ResetRequests, oldest
// first: every one, up to the record's bounds (emurecord.Ring: the newest
// emurecord.MaxRequests, within its bytes of heads and bodies).
func (e *Emulator) Requests() []Recorded {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.st.requests.All()
	for i, r := range out {
		out[i].Header = r.Header.Clone()
		out[i].Query = cloneValues(r.Query)
		out[i].Body = append([]byte(nil), r.Body...)
	}
	return out
}

// RecordStats tells what the request record holds, as emurecord.Path
// answers it.
func (e *Emulator) RecordStats() emurecord.Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.requests.Stats(func(r Recorded) string {
		if r.RawQuery == "" {
			return r.Method + " " + r.Path
		}
		return r.Method + " " + r.Path + "?" + r.RawQuery
	})
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
	e.st.requests.Reset()
}

// recordCost is what rec holds in memory, for the record's bounds.
func recordCost(rec Recorded) emurecord.Cost {
	return emurecord.Cost{
		Head: emurecord.HeadBytes([]string{rec.Method, rec.Path, rec.RawQuery}, rec.Query, rec.Header),
		Body: len(rec.Body),
	}
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
		e.st.requests.Add(rec, recordCost(rec))
		e.mu.Unlock()
		e.logf("forgejoemu: %s %s", r.Method, r.URL.RequestURI())
		next.ServeHTTP(w, r)
	})
}
