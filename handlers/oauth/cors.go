package oauth

import "net/http"

// CORS lets browser-based MCP clients (the MCP Inspector, web agents) read
// the metadata documents and call registration, token and revocation from
// their own origin. These endpoints use no cookies or ambient credentials
// (public clients send everything in the request), so any origin may call
// them; the browser pages (/oauth/authorize, callback, consent) get no CORS
// headers: they are navigated to, never fetched.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "WWW-Authenticate")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Mcp-Protocol-Version")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
