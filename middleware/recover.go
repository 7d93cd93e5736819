package middleware

import (
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Recover turns a panic below it into a 500 internal_error and logs the
// stack with the request ID. http.ErrAbortHandler is re-raised: it is the
// standard way to abort a response on purpose.
func Recover(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				if p == http.ErrAbortHandler {
					panic(p)
				}
				rec := RecordFromContext(r.Context())
				log.Error("panic", "request_id", rec.RequestID(), "panic", p, "stack", string(debug.Stack()))
				if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
					// The response has begun; a second status cannot be sent.
					// Abort so the client sees a broken response, not a short one.
					panic(http.ErrAbortHandler)
				}
				Refuse(w, r, toolerr.New(toolerr.Internal, "internal error"))
			}()
			next.ServeHTTP(w, r)
		})
	}
}
