package forgejoemu

import (
	"io"
	"net/http"
)

// SetStock makes the emulator answer like a stock forge (Forgejo or Gitea
// without Core's extensions), as recorded from a real Gitea 1.27.3
// (test/contract/testdata/gitea-1.27.3/README.md):
//
//   - the evidence URL, pulls/{index}.diff?binary=true&evidence=v1, ignores
//     its query and answers 200 text/plain with the plain binary diff;
//   - every agent-work-grant route answers 404 text/plain "404 page not
//     found", the router's own answer for a route it does not have.
//
// The anonymous reads are unchanged. false restores Core.
func (e *Emulator) SetStock(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.stock = on
}

func (e *Emulator) isStock() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.stock
}

// stockHasNoGrants answers the grant routes of a stock forge.
func (e *Emulator) stockHasNoGrants(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.isStock() {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "404 page not found\n")
	})
}
