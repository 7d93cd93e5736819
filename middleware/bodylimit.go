package middleware

import (
	"net/http"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// MaxBodyBytes is the request body limit of
// docs/architecture.md#middleware-chain: 1 MiB.
const MaxBodyBytes = 1 << 20

// BodyLimit refuses bodies over limit bytes with 413 before any parsing. A
// declared Content-Length over the limit is refused at once; a body of
// unknown length is cut by http.MaxBytesReader and whoever reads it (the MCP
// peek) answers 413 when the cut is reached.
func BodyLimit(limit int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > limit {
				Refuse(w, r, toolerr.New(toolerr.BodyTooLarge, "request body over %d bytes", limit))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			next.ServeHTTP(w, r)
		})
	}
}
