// Package site is the gateway's own request-time pages and documents: the
// landing page and the RFC 9728 metadata of both MCP endpoints. The server
// package only wires them; what they answer lives here, with the other
// handlers.
package site

import (
	"encoding/json"
	"net/http"
	"net/url"
)

// ForgejoResource is the RFC 9728 metadata of /mcp/forgejo: its
// authorization server is the Forgejo origin (when one is configured),
// whose tokens the endpoint forwards.
func ForgejoResource(publicURL string, forgejoOrigin *url.URL) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		md := map[string]any{
			"resource":                 publicURL + "/mcp/forgejo",
			"bearer_methods_supported": []string{"header"},
			"scopes_supported":         []string{"read:repository", "write:issue"},
			"resource_name":            "agent-gateway Forgejo tools",
		}
		if forgejoOrigin != nil {
			md["authorization_servers"] = []string{forgejoOrigin.String()}
		}
		writeJSON(w, md)
	}
}

// DocumentsResource is the RFC 9728 metadata of /mcp/documents: its
// authorization server is this gateway
// (docs/architecture.md#endpoints-and-transports). Without an identity
// provider (oidc.issuer) that server's own metadata answers that it is not
// configured, so a client learns why it cannot authorize, and tokens come
// from the admin CLI alone. scopes is asked on every request.
func DocumentsResource(publicURL string, scopes func() []string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"resource":                 publicURL + "/mcp/documents",
			"authorization_servers":    []string{publicURL},
			"bearer_methods_supported": []string{"header"},
			"scopes_supported":         scopes(),
			"resource_name":            "agent-gateway project documents",
			"resource_documentation":   publicURL + "/",
		})
	}
}

// writeJSON answers 200 with v as JSON, never cached.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}
