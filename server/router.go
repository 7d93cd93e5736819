package server

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/handlers/site"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/web"
)

// Handler assembles the whole HTTP surface. The middleware order is the
// contract of docs/architecture.md#middleware-chain; each step says why it
// sits where it does.
func (g *Gateway) Handler() http.Handler {
	r := chi.NewRouter()
	// The write timeout bounds each write, not the whole response (no total
	// deadline on a diff page, docs/architecture.md#operations); outermost,
	// so it holds the connection's own writer.
	r.Use(middleware.WriteDeadline(g.cfg.WriteTimeout))
	// Request ID next, so every later log line and refusal names the request.
	r.Use(middleware.RequestID)
	// The client address is settled once, from trusted proxies only, before
	// anything logs or budgets on it; with it the one key every
	// per-address bound counts by (an IPv6 client by its prefix).
	r.Use(middleware.ClientIP(g.cfg.TrustedProxies, g.cfg.ClientIPv6Prefix))
	// HTTP/2 rapid reset: outside everything that may end a request early
	// for its own reasons, it counts streams the client reset against
	// those it completed, per connection, and closes a connection that
	// resets far more (docs/security.md).
	r.Use(g.resetGuard())
	// The access log wraps recovery (docs/architecture.md#middleware-chain):
	// a recovered panic then still gets its access line, with status 500.
	r.Use(middleware.AccessLog(g.log))
	r.Use(middleware.Recover(g.log))
	// Metrics see every request, including refusals of the MCP chain below.
	metrics := middleware.NewMetrics(g.registry, g.knownTool)
	zeroPages(metrics, g.forgejoC, g.documentsC)
	r.Use(metrics.Handler)
	// The load bounds come after the log and metrics, so every refusal is
	// logged and counted, and before anything reads a body or calls an
	// upstream, so a refusal costs almost nothing. Requests in flight are
	// bounded first: a request refused there never reserves body bytes.
	// The body budget refuses a declared length over the route's cap and
	// counts bytes as they arrive, holding each body to a minimum data
	// rate; it is global (every route, /oauth/* forms included).
	r.Use(g.bounds.inFlight.Handler)
	r.Use(g.bounds.bodies.Handler)

	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", g.readyz)
	if g.cfg.MetricsListen == "" {
		// The API listener is public: without a metrics listener it
		// serves the exposition without the store's row counts.
		r.Handle("/metrics", g.apiMetricsHandler())
	}
	r.Get("/", site.Landing(Version, g.cfg.PublicURL, g.forgejoC, g.documentsC))
	r.Handle("/static/*", web.Static())
	r.Get("/.well-known/oauth-protected-resource/mcp/forgejo", site.ForgejoResource(g.cfg.PublicURL, g.cfg.ForgejoOrigin))

	// Forgejo is the authority of its tokens' scopes: the challenge names
	// none (the metadata lists Forgejo's).
	r.Handle("/mcp/forgejo", g.mcpChain(g.forgejoC, middleware.AuthOptions{Challenge: middleware.Challenge{
		ResourceMetadataURL: g.cfg.PublicURL + "/.well-known/oauth-protected-resource/mcp/forgejo",
	}}, forgejoAuthenticator))

	// The documents endpoint requires a gateway-issued bearer
	// (docs/architecture.md#endpoints-and-transports).
	r.Method(http.MethodGet, "/.well-known/oauth-protected-resource/mcp/documents", oauth.CORS(site.DocumentsResource(g.cfg.PublicURL, func() []string { return g.oauth.ScopesSupported() })))
	r.Method(http.MethodOptions, "/.well-known/oauth-protected-resource/mcp/documents", oauth.CORS(http.NotFoundHandler()))
	// Its authorization server (docs/architecture.md#authorization-server):
	// metadata and /oauth/*.
	g.mountOAuth(r)
	r.Handle("/mcp/documents", g.mcpChain(g.documentsC, middleware.AuthOptions{
		Required: true,
		// Every scope the endpoint's tools check: a client asks for the
		// 401's scope, so one login covers every tool (MCP authorization,
		// "Scope Selection Strategy").
		Challenge: middleware.Challenge{
			ResourceMetadataURL: g.cfg.PublicURL + "/.well-known/oauth-protected-resource/mcp/documents",
			Scopes:              g.documentsC.ScopeNames(),
		},
		// Each gateway-issued bearer is looked up in the store before it
		// can be refused; this bounds how many one address gets refused.
		Refused: middleware.NewRefusedBearers(g.budgetOptions(g.documentsC.Name)),
	}, g.documentsAuth))
	// Any other path under /mcp (a client's guessed /mcp, a trailing
	// slash) is told where the two endpoints are; chi matches the exact
	// endpoint routes above first.
	unknown := site.UnknownEndpoint(g.cfg.PublicURL)
	r.Handle("/mcp", unknown)
	r.Handle("/mcp/*", unknown)
	return r
}

// mcpChain stacks the MCP-specific middleware in front of a toolset.
func (g *Gateway) mcpChain(c *toolset.Toolset, auth middleware.AuthOptions, a middleware.Authenticator) http.Handler {
	allowed := append([]string{g.cfg.PublicOrigin()}, g.cfg.AllowedOrigins...)
	bo := g.budgetOptions(c.Name)
	budgets := middleware.NewBudgets(c, bo)
	g.zeroBudgets(c, endpointBudgets(c, auth, bo))
	h := c.HTTPHandler(g.log, toolset.HTTPOptions{SDKOnly: !g.cfg.OwnedToolCalls})
	// Innermost first: budgets are spent only by calls that passed the scope
	// gate, which needs the principal (authentication), which needs the
	// peeked call; the peek reads a body the limit has already bounded; the
	// origin check refuses browser requests before any body is read.
	h = budgets.Handler(h)
	// The in-flight reserve for verified principals is applied here, the
	// first point where the principal is known.
	h = g.bounds.inFlight.Reserved(h)
	h = middleware.ScopeGate(c, auth.Challenge)(h)
	h = middleware.Authenticate(a, auth)(h)
	h = middleware.MCPPeek(h)
	h = middleware.BodyLimit(middleware.MaxBodyBytes)(h)
	h = middleware.Origin(allowed)(h)
	if g.tracer != nil {
		// Outermost: every MCP request is a span, refusals included, and
		// the upstream and store spans below are its children.
		h = middleware.Trace(middleware.TraceOptions{Tracer: g.tracer, TrustedParents: g.cfg.TrustedProxies, Known: c.Has})(h)
	}
	return h
}

// MetricsHandler serves the whole Prometheus exposition of this gateway,
// the store's row counts included: it is what metrics.listen serves, an
// address only the operator's scraper should reach.
func (g *Gateway) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{g.registry, g.storeRegistry}, promhttp.HandlerOpts{Registry: g.registry})
}

// apiMetricsHandler is /metrics on the API listener (metrics.listen
// unset): everything but storeRegistry's series, since anyone who can
// reach the gateway can read it.
func (g *Gateway) apiMetricsHandler() http.Handler {
	return promhttp.HandlerFor(g.registry, promhttp.HandlerOpts{Registry: g.registry})
}

// readyz answers ready (200) while what every request needs — the store,
// and Redis when budgets are shared — answers; an upstream that is not
// configured leaves the gateway ready, since the other endpoints still
// serve (the documents endpoint may be all an operator wants), and the
// body lists each one's state for the operator to see.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	if g.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, readyzBody{Status: "draining", Upstreams: g.upstreamConfig()})
		return
	}
	states, err := g.readiness(r.Context())
	if err != nil {
		g.log.Warn("not ready", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, readyzBody{Status: "unavailable", Upstreams: states})
		return
	}
	writeJSON(w, http.StatusOK, readyzBody{Status: "ready", Upstreams: states})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
