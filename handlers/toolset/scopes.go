package toolset

import (
	"slices"
	"strings"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// ScopeUse is one scope a toolset's tools check, with the tools that need
// it, in toolset order.
type ScopeUse struct {
	middleware.Scope
	Tools []string
}

// Scopes are the scopes the toolset's tools declare, sorted by name. They
// are the one source of every scope list the gateway shows: what its
// authorization server offers and the consent page says, the admin's known
// scopes, the landing page, the protected-resource metadata and the
// endpoint's challenge.
func (c *Toolset) Scopes() []ScopeUse {
	var out []ScopeUse
	for _, t := range c.tools {
		for _, s := range t.Policy.Scopes {
			i := slices.IndexFunc(out, func(u ScopeUse) bool { return u.Name == s.Name })
			if i < 0 {
				out = append(out, ScopeUse{Scope: s})
				i = len(out) - 1
			}
			out[i].Tools = append(out[i].Tools, t.Name)
		}
	}
	slices.SortFunc(out, func(a, b ScopeUse) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ScopeNames are the names of Scopes, in the same order.
func (c *Toolset) ScopeNames() []string {
	uses := c.Scopes()
	out := make([]string, 0, len(uses))
	for _, u := range uses {
		out = append(out, u.Name)
	}
	return out
}

// checkScopes panics on a scope that does not say what it allows, or that
// two tools describe differently: either would leave the consent page
// without one true sentence for it.
func checkScopes(tools []Tool) {
	allows := map[string]string{}
	for _, t := range tools {
		for _, s := range t.Policy.Scopes {
			if s.Name == "" || s.Allows == "" {
				panic("toolset: tool " + t.Name + " declares a scope without a name or without what it allows")
			}
			if prev, ok := allows[s.Name]; ok && prev != s.Allows {
				panic("toolset: scope " + s.Name + " is described two ways")
			}
			allows[s.Name] = s.Allows
		}
	}
}
