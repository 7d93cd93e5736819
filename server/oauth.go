package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// defaultOIDCScopes are requested at the identity provider unless
// oidc.scopes says otherwise.
var defaultOIDCScopes = []string{"openid", "profile", "email"}

// wireOAuth builds the authorization server of /mcp/documents
// (docs/architecture.md#authorization-server).
// Without oidc.issuer it is built unconfigured: its endpoints and its
// metadata answer that it is not configured.
func (g *Gateway) wireOAuth() error {
	var idp *oauth.IdentityProvider
	if g.cfg.OIDCIssuer != "" {
		secret, err := oidcClientSecret(g.cfg)
		if err != nil {
			return err
		}
		idp = oauth.NewIdentityProvider(oauth.IdentityProviderConfig{
			Issuer: g.cfg.OIDCIssuer, ClientID: g.cfg.OIDCClientID, ClientSecret: secret,
			Scopes: g.cfg.OIDCScopes, RedirectURL: g.cfg.PublicURL + "/oauth/callback",
		})
	} else {
		g.log.Info("OAuth authorization server unconfigured (no oidc.issuer): /mcp/documents accepts only admin-issued tokens")
	}
	g.oauthMetrics = newOAuthMetrics(g.registry, g.storeRegistry)
	cfg := oauth.Config{
		Issuer:                       g.cfg.PublicURL,
		Resource:                     g.cfg.PublicURL + "/mcp/documents",
		Scopes:                       toolsetScopes(g.documentsC),
		Store:                        guardedOAuthStore{Store: g.store, guard: storeGuard{breaker: g.breakers.store}},
		IdentityProvider:             idp,
		Log:                          g.log,
		LoginTTL:                     g.cfg.OAuthLoginTTL,
		AuthorizationsPerMinute:      g.cfg.OAuthAuthorizePerMinute,
		RegistrationsPerMinute:       g.cfg.OAuthRegisterPerMinute,
		TotalAuthorizationsPerMinute: g.cfg.OAuthAuthorizeTotalPerMinute,
		TotalRegistrationsPerMinute:  g.cfg.OAuthRegisterTotalPerMinute,
		MaxUnusedClients:             g.cfg.OAuthMaxUnusedClients,
		MaxLoginSessions:             g.cfg.OAuthMaxLoginSessions,
		ClientMetadata: oauth.ClientMetadataConfig{
			Hosts:                 g.cfg.OAuthClientMetadataHosts,
			AllowLoopback:         g.cfg.OAuthClientMetadataAllowLoopback,
			Ports:                 g.cfg.OAuthClientMetadataPorts,
			FetchesPerMinute:      g.cfg.OAuthClientMetadataFetchesPerMinute,
			TotalFetchesPerMinute: g.cfg.OAuthClientMetadataTotalFetchesPerMinute,
			HostFetchesPerMinute:  g.cfg.OAuthClientMetadataHostFetchesPerMinute,
			Observe:               func(result string) { g.oauthMetrics.cimd.WithLabelValues(result).Inc() },
		},
		AppRedirectSchemes: g.cfg.OAuthAppRedirectSchemes,
		Refused: func(endpoint, reason string) {
			g.oauthMetrics.refusals.WithLabelValues(endpoint, reason).Inc()
		},
	}
	if g.redis != nil {
		// Every replica counts the same per-address limits, as budgets do.
		cfg.NewCounter = func(limit string) httprate.LimitCounter {
			return middleware.NewRedisCounter(g.redis, g.cfg.BudgetKeyPrefix()+"oauth:"+limit+":").WithBreaker(g.breakers.redis)
		}
	}
	g.oauth = oauth.New(cfg)
	return nil
}

// mountOAuth serves the authorization server's endpoints.
func (g *Gateway) mountOAuth(r chi.Router) {
	r.Method(http.MethodGet, "/.well-known/oauth-authorization-server", oauth.CORS(http.HandlerFunc(g.oauth.Metadata)))
	r.Method(http.MethodOptions, "/.well-known/oauth-authorization-server", oauth.CORS(http.NotFoundHandler()))
	r.Mount("/oauth", g.oauth.Routes())
}

// toolsetScopes are the scopes a toolset's tools declare, each with what
// it allows and the tools that need it (the consent page's text), so a
// scope added by a new tool is offered and explained without touching the
// authorization server.
func toolsetScopes(c *toolset.Toolset) []oauth.Scope {
	uses := c.Scopes()
	out := make([]oauth.Scope, 0, len(uses))
	for _, u := range uses {
		out = append(out, oauth.Scope{Name: u.Name, Description: u.Allows + " (tools: " + strings.Join(u.Tools, ", ") + ")"})
	}
	return out
}

// oidcClientSecret reads the gateway's client secret at the identity
// provider: AGENT_GATEWAY_OIDC_CLIENT_SECRET or oidc.client_secret_file.
func oidcClientSecret(cfg Config) (string, error) {
	if cfg.OIDCClientSecretFile == "" {
		return cfg.OIDCClientSecret, nil
	}
	b, err := readFileBounded(cfg.OIDCClientSecretFile, maxSecretFileBytes)
	if err != nil {
		return "", &ConfigError{Problems: []string{"oidc.client_secret_file: " + err.Error()}}
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", &ConfigError{Problems: []string{"oidc.client_secret_file: the file is empty"}}
	}
	return s, nil
}

// parseIssuer checks an OpenID Connect issuer URL: https (http only on a
// loopback host), no query or fragment. It is kept exactly as given: the
// provider's ID tokens must name the same string.
func parseIssuer(v string) error {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("want an absolute https URL without query or fragment")
	}
	if !upstream.HasValidPort(u) {
		return fmt.Errorf("the port must be from 1 to 65535")
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && upstream.IsLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("scheme must be https (or http on a loopback host)")
}

// validateOIDC checks the oidc.* keys together. given names the keys the
// configuration set, including those whose value was refused, so an
// invalid issuer still requires its client ID in the same report.
func (c *Config) validateOIDC(given map[string]bool) []string {
	var problems []string
	issuer := c.OIDCIssuer != "" || given["oidc.issuer"]
	switch {
	case issuer && c.OIDCClientID == "":
		problems = append(problems, "oidc.client_id: required when oidc.issuer is set")
	case !issuer && (c.OIDCClientID != "" || c.OIDCClientSecret != "" || c.OIDCClientSecretFile != ""):
		problems = append(problems, "oidc.issuer: required when oidc.client_id or a client secret is set")
	}
	if c.OIDCClientSecret != "" && c.OIDCClientSecretFile != "" {
		problems = append(problems, "oidc.client_secret/oidc.client_secret_file: set one, not both")
	}
	if issuer && !slices.Contains(c.OIDCScopes, "openid") {
		problems = append(problems, "oidc.scopes: must include openid")
	}
	return problems
}
