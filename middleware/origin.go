package middleware

import (
	"net/http"
	"slices"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Origin refuses browser requests whose Origin header is not one of the
// allowed origins (the gateway's own public origin and any configured
// extra). It defends the MCP endpoints against DNS rebinding and cross-site
// use from a browser; requests without an Origin header (MCP clients,
// curl) are not browser-sent and pass.
func Origin(allowed []string) func(http.Handler) http.Handler {
	norm := make([]string, 0, len(allowed))
	for _, a := range allowed {
		norm = append(norm, strings.ToLower(strings.TrimRight(a, "/")))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origins := r.Header.Values("Origin")
			if len(origins) > 1 || (len(origins) == 1 && !slices.Contains(norm, strings.ToLower(origins[0]))) {
				Refuse(w, r, toolerr.New(toolerr.OriginForbidden, "cross-origin request refused"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
