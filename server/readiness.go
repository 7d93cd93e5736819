package server

import (
	"context"
	"fmt"
	"log/slog"
)

// The states /readyz reports per upstream. Forgejo, GitHub and the OpenID
// provider are configured or not: readiness never calls them, so an
// upstream outage does not take every replica out of rotation (their
// health is in the upstream metrics). The store, and Redis when
// configured, are checked on every call: no request is served without
// them.
const (
	stateConfigured   = "configured"
	stateUnconfigured = "unconfigured"
	stateOK           = "ok"
	stateUnavailable  = "unavailable"
)

// readyzBody is the JSON of /readyz. It names states only, never an
// origin, issuer or error text: /readyz answers anyone.
type readyzBody struct {
	Status    string            `json:"status"`
	Upstreams map[string]string `json:"upstreams"`
}

// upstreamConfig is the configured-or-not state of forgejo, github (an API
// origin and a loaded App key) and oidc.
func (g *Gateway) upstreamConfig() map[string]string {
	state := func(ok bool) string {
		if ok {
			return stateConfigured
		}
		return stateUnconfigured
	}
	return map[string]string{
		"forgejo": state(g.cfg.ForgejoOrigin != nil),
		"github":  state(g.githubApp),
		"oidc":    state(g.cfg.OIDCIssuer != ""),
		"redis":   state(g.cfg.RedisURL != ""),
	}
}

// readiness runs every readiness check (the store, Redis when configured)
// and returns each upstream's state with the first failure.
func (g *Gateway) readiness(ctx context.Context) (map[string]string, error) {
	states := g.upstreamConfig()
	var first error
	for _, c := range g.ready {
		states[c.name] = stateOK
		if err := c.check(ctx); err != nil {
			states[c.name] = stateUnavailable
			if first == nil {
				first = fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	return states, first
}

// logUsableEndpoints says at start what each endpoint can do with this
// configuration, so an operator who left an upstream out sees it in the
// first lines of the log rather than in a caller's error.
func (g *Gateway) logUsableEndpoints(log *slog.Logger) {
	up := g.upstreamConfig()
	forgejo := "usable: Forgejo at forgejo.origin"
	if up["forgejo"] != stateConfigured {
		forgejo = "unusable: no forgejo.origin, every tool answers upstream_unconfigured"
	}
	documents := "usable: document and catalog reads through the GitHub App"
	if up["github"] != stateConfigured {
		documents = "partly usable: no GitHub App (github.app_id and github.private_key_file), document and catalog reads answer provider_unconfigured"
	}
	oauth := "usable: login at oidc.issuer"
	if up["oidc"] != stateConfigured {
		oauth = "unusable: no oidc.issuer, /mcp/documents accepts only admin-issued tokens"
	}
	log.Info("endpoints", "mcp_forgejo", forgejo, "mcp_documents", documents, "oauth", oauth)
}
