package middleware

import (
	"net/http"
)

// Scope is an OAuth scope the gateway checks for a tool. The tool that
// needs it declares it, so the definition is the one owner of both the
// name and what it allows: the authorization server's scopes, their
// consent text, the admin's known scopes, the landing page and the
// endpoint's challenge are all derived from the tools' policies.
type Scope struct {
	// Name is the scope on the wire, e.g. documents:read.
	Name string
	// Allows says in a sentence what holding the scope lets a client do;
	// the consent page adds the tools that need it.
	Allows string
}

// ToolPolicy is what a tool declares about who may call it and which
// budget it spends.
type ToolPolicy struct {
	// Anonymous tools may be called without a bearer.
	Anonymous bool
	// Scopes the gateway itself checks (gateway-issued tokens). Forgejo
	// passthrough tools leave this empty: Forgejo enforces its own scopes.
	Scopes []Scope
	// Write tools spend the write budget; everything else the read budget.
	Write bool
	// Dispatch tools store a row for their caller on every call (a
	// workflow): besides the write budget they spend the caller's dispatch
	// budget (BudgetOptions.DispatchPerWindow), which bounds what one
	// principal can add to the store.
	Dispatch bool
}

// ScopeNames are the names of the policy's scopes, in order.
func (p ToolPolicy) ScopeNames() []string {
	out := make([]string, 0, len(p.Scopes))
	for _, s := range p.Scopes {
		out = append(out, s.Name)
	}
	return out
}

// Policies looks up a tool's policy by name.
type Policies interface {
	ToolPolicy(name string) (ToolPolicy, bool)
}

// ScopeGate enforces a tool's policy before any upstream or store call:
// an anonymous caller of a non-anonymous tool gets the endpoint's 401
// challenge; a principal known to lack a scope gets 403 with
// error="insufficient_scope" and the scopes to ask for (Challenge). It
// never logs and continues: a failed check always ends the request.
// Unknown tools pass, so the MCP server answers them with its JSON-RPC
// error.
func ScopeGate(p Policies, c Challenge) func(http.Handler) http.Handler {
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
				c.Unauthorized(w, r, "", "tool "+quote(call.Tool)+" needs an authenticated caller")
				return
			}
			needed := pol.ScopeNames()
			for _, s := range needed {
				if !who.HasScope(s) {
					c.InsufficientScope(w, r, who, call.Tool, needed)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
