package middleware

import (
	"net/http"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// ToolPolicy is what a tool declares about who may call it and which
// budget it spends.
type ToolPolicy struct {
	// Anonymous tools may be called without a bearer.
	Anonymous bool
	// Scopes the gateway itself checks (gateway-issued tokens). Forgejo
	// passthrough tools leave this empty: Forgejo enforces its own scopes.
	Scopes []string
	// Write tools spend the write budget; everything else the read budget.
	Write bool
	// Dispatch tools store a row for their caller on every call (a
	// workflow): besides the write budget they spend the caller's dispatch
	// budget (BudgetOptions.DispatchPerWindow), which bounds what one
	// principal can add to the store.
	Dispatch bool
}

// Policies looks up a tool's policy by name.
type Policies interface {
	ToolPolicy(name string) (ToolPolicy, bool)
}

// ScopeGate enforces a tool's policy before any upstream or store call:
// an anonymous caller of a non-anonymous tool gets 401 with the endpoint's
// resource metadata; a principal known to lack a scope gets 403 with
// error="insufficient_scope" and the scopes needed. It never logs and
// continues: a failed check always ends the request. Unknown tools pass,
// so the MCP server answers them with its JSON-RPC error.
func ScopeGate(p Policies, resourceMetadataURL string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			call := RecordFromContext(r.Context()).Call()
			if call.Method != "tools/call" {
				next.ServeHTTP(w, r)
				return
			}
			pol, ok := p.ToolPolicy(call.Tool)
			if !ok || pol.Anonymous {
				next.ServeHTTP(w, r)
				return
			}
			who := PrincipalFromContext(r.Context())
			if who == nil {
				Challenge(w, r, resourceMetadataURL, "", "tool "+quote(call.Tool)+" needs an authenticated caller")
				return
			}
			var missing []string
			for _, s := range pol.Scopes {
				if !who.HasScope(s) {
					missing = append(missing, s)
				}
			}
			if len(missing) > 0 {
				h := `Bearer error="insufficient_scope", scope="` + strings.Join(pol.Scopes, " ") + `"`
				if resourceMetadataURL != "" {
					h += `, resource_metadata="` + resourceMetadataURL + `"`
				}
				w.Header().Set("WWW-Authenticate", h)
				Refuse(w, r, toolerr.New(toolerr.InsufficientScope, "tool %s needs scope %s", quote(call.Tool), strings.Join(missing, " ")).With("required_scopes", pol.Scopes))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
