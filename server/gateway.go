package server

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/agent-gateway/agent-gateway/handlers/forgejotools"
	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo"
)

// Gateway is the wired application: configuration, clients, toolsets and
// the router. One process holds one Gateway.
type Gateway struct {
	cfg      Config
	log      *slog.Logger
	registry *prometheus.Registry
	metrics  *upstreamMetrics
	domain   *domainMetrics
	forgejo  *forgejo.Client
	forgejoC *toolset.Toolset
	redis    redis.UniversalClient // nil: budgets in memory
	// budgetRejections counts 429s by endpoint toolset and budget.
	budgetRejections *prometheus.CounterVec
	bounds           *loadBounds
	breakers         *dependencyBreakers
	// draining is set on SIGTERM: /readyz answers 503 from then on.
	draining atomic.Bool
	ready    []readinessCheck
	// githubApp is whether document reads can mint installation tokens:
	// an API origin and a loaded GitHub App key.
	githubApp bool
	closers   []func() error

	store         store.Store
	documentsC    *toolset.Toolset
	documentsAuth middleware.Authenticator
	oauth         *oauth.Server
	oauthMetrics  *oauthMetrics
	// storeRegistry holds the series that count what the store holds
	// (OAuth rows, rows purged): how many clients, consents and tokens a
	// deployment has is the operator's business, so they are served only
	// on metrics.listen, never on the API listener (MetricsHandler).
	storeRegistry *prometheus.Registry
	// purges are the scheduled purges this deployment runs, with their
	// counters (wirePurges).
	purges []scheduledPurge
	// tracer is nil with tracing off (tracing.otlp_endpoint unset).
	tracer trace.Tracer
}

type readinessCheck struct {
	name  string
	check func(context.Context) error
}

// New wires a Gateway from cfg. Everything that can be checked without
// serving is checked here, so a bad deployment fails at start.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Gateway, error) {
	g := newForgejoGateway(cfg, log)
	g.budgetRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_gateway_budget_rejections_total",
		Help: "Requests refused with 429 because the caller's budget was spent, by toolset and budget (read, write, dispatch, ip_ceiling, refused_bearers).",
	}, []string{"toolset", "budget"})
	g.registry.MustRegister(g.budgetRejections)
	g.bounds = newLoadBounds(g.cfg, g.registry)
	g.breakers = newDependencyBreakers(g.registry)
	if cfg.RedisURL != "" {
		if err := g.openRedis(ctx); err != nil {
			g.Close()
			return nil, err
		}
	}
	if err := g.wireDocuments(ctx); err != nil {
		g.Close()
		return nil, err
	}
	if err := g.wireAudit(); err != nil {
		g.Close()
		return nil, err
	}
	if err := g.wireOAuth(); err != nil {
		g.Close()
		return nil, err
	}
	g.wirePurges()
	g.zeroKnownSeries()
	return g, nil
}

// newForgejoGateway wires what the Forgejo toolset needs and nothing that
// keeps state: metrics, tracing, the Forgejo client and the toolset. It
// opens no store, Redis or file, so `stdio`, which serves only this
// toolset with the process's own credential, leaves nothing behind in the
// directory it was started in (no data_dir, no generated cursor secret).
func newForgejoGateway(cfg Config, log *slog.Logger) *Gateway {
	cfg = boundDefaults(cfg)
	g := &Gateway{cfg: cfg, log: log, registry: prometheus.NewRegistry(), storeRegistry: prometheus.NewRegistry()}
	g.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g.registry.MustRegister(buildInfo())
	g.metrics = newUpstreamMetrics(g.registry)
	g.domain = newDomainMetrics(g.registry)
	g.tracer = g.startTracing()
	if cfg.ForgejoOrigin != nil {
		// Forgejo is the operator's own forge: it gets the traceparent, so
		// its spans join the call's trace.
		g.forgejo = forgejo.New(upstream.New(upstream.Config{
			Name: "forgejo", Origin: cfg.ForgejoOrigin, IOTimeout: cfg.ForgejoIOTimeout, Observer: g.metrics,
			Tracing: g.upstreamTracing(forgejo.Routes, true),
		}))
		g.forgejo.ObserveEvidence(g.domain.evidence)
	}
	g.forgejoC = forgejoToolset(g.forgejo, g.verifiedVolume())
	return g
}

// forgejoToolset is the toolset served at /mcp/forgejo and over stdio;
// volume accounts the diff bytes verified per caller (nil: not counted).
func forgejoToolset(c *forgejo.Client, volume *forgejotools.VerifiedVolume) *toolset.Toolset {
	impl := mcp.Implementation{Name: "agent-gateway-forgejo", Version: Version}
	return toolset.New(impl.Name, impl.Version,
		"Read a Forgejo forge: search repositories, read repositories and pull requests, "+
			"read verified pull request diff pages, and propose work through agent work grants. "+
			"Without a bearer token only the public read tools are offered.",
		slices.Concat(forgejotools.AnonymousTools(c),
			[]toolset.Tool{forgejotools.PullRequestDiffTool(c, impl, volume)},
			forgejotools.GrantTools(c))...)
}

// Close releases what New opened.
func (g *Gateway) Close() error {
	var first error
	for i := len(g.closers) - 1; i >= 0; i-- {
		if err := g.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Ready runs the readiness checks.
func (g *Gateway) Ready(ctx context.Context) error {
	_, err := g.readiness(ctx)
	return err
}

// knownTool reports whether a name is a tool of any toolset (bounded labels).
func (g *Gateway) knownTool(name string) bool {
	return g.forgejoC.Has(name) || g.documentsC.Has(name)
}

// forgejoAuthenticator accepts any bearer but the gateway's own tokens as a
// passthrough principal: Forgejo, not the gateway, decides whether it is
// valid (docs/architecture.md#forgejo-token-passthrough). A gateway token
// (agw_…) is refused with
// invalid_token, so it is never sent to the Forgejo origin.
var forgejoAuthenticator = middleware.AuthenticatorFunc(func(_ context.Context, bearer string) (*middleware.Principal, error) {
	if middleware.IsGatewayToken(bearer) {
		return nil, middleware.ErrInvalidToken
	}
	return middleware.NewPassthrough(bearer), nil
})
