package middleware

import (
	"crypto/rand"
	"net/http"
	"regexp"
)

// RequestIDHeader carries the request ID in and out.
const RequestIDHeader = "X-Request-Id"

// A caller-sent ID is kept only when it is short and plain, so it cannot
// inject into logs or response headers.
var acceptableID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// RequestID creates the request's Record, adopts a well-formed X-Request-Id
// or generates one, and echoes it on the response. It runs first so every
// later log line and refusal can name the request.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !acceptableID.MatchString(id) {
			id = rand.Text()
		}
		rec := &Record{requestID: id}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(WithRecord(r.Context(), rec)))
	})
}
