package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/middleware"
)

// The minimum data rate of request bodies (docs/architecture.md#load-bounds):
// a body may fall at most bodyGrace behind bodyMinRate and go at most
// bodyGrace without a byte, so a connection that stops sending is cut within
// bodyGrace, while any link of 32 kbit/s or more keeps going;
// bodyReadTimeout bounds a whole request (a 1 MiB body needs about
// 17.5 KiB/s on average).
const (
	bodyMinRate     = 4 << 10
	bodyGrace       = 5 * time.Second
	bodyReadTimeout = 60 * time.Second
)

// routeBodyCap is the most body bytes r's route reads: 1 MiB on the MCP
// endpoints, 64 KiB on /oauth/*, and 64 KiB on every other route (none
// reads a body); a declared length over it is 413 before anything is
// reserved.
func routeBodyCap(r *http.Request) int64 {
	if strings.HasPrefix(r.URL.Path, "/mcp/") {
		return middleware.MaxBodyBytes
	}
	return oauth.MaxBodyBytes
}

// verifiedReserve is the part of http.max_in_flight kept for verified
// principals (an eighth).
func verifiedReserve(maxInFlight int) int { return maxInFlight / 8 }

// loadBounds are the gateway-wide bounds on what callers can make it hold
// at once (docs/architecture.md#load-bounds): requests in flight and buffered
// body bytes here, open connections on the listener (connLimiter). Each is a
// gauge, and every refusal a count by bound, in /metrics.
type loadBounds struct {
	inFlight *middleware.InFlight
	bodies   *middleware.BodyBudget
	stalls   *middleware.Stalls
	// resets counts HTTP/2 resets per client key (resetGuard) and cuts
	// off the keys the listener then refuses.
	resets     *middleware.AddressResets
	refusals   *prometheus.CounterVec
	evictions  *prometheus.CounterVec
	idleClosed prometheus.Counter
}

// boundDefaults fills the load bounds a Config built in code (not through
// Default and the loaders, e.g. in tests) leaves at zero, which would
// otherwise refuse everything.
func boundDefaults(cfg Config) Config {
	d := Default()
	for _, f := range []struct{ v, d *int }{
		{&cfg.MaxConnections, &d.MaxConnections}, {&cfg.MaxConnectionsPerIP, &d.MaxConnectionsPerIP},
		{&cfg.MaxInFlight, &d.MaxInFlight}, {&cfg.MaxInFlightPerIP, &d.MaxInFlightPerIP},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if cfg.BodyBudgetBytes <= 0 {
		cfg.BodyBudgetBytes = d.BodyBudgetBytes
	}
	if cfg.BodyBudgetPerIPBytes <= 0 {
		cfg.BodyBudgetPerIPBytes = d.BodyBudgetPerIPBytes
	}
	if cfg.ClientIPv6Prefix <= 0 {
		cfg.ClientIPv6Prefix = d.ClientIPv6Prefix
	}
	return cfg
}

func newLoadBounds(cfg Config, reg prometheus.Registerer) *loadBounds {
	b := &loadBounds{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_load_refusals_total",
			Help: "Requests and connections refused because a load bound was reached, by bound (connections, connections_per_ip, resets_per_ip, in_flight, in_flight_per_ip, body_budget, body_budget_per_ip).",
		}, []string{"bound"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_stalled_requests_evicted_total",
			Help: "Requests waiting for their own body bytes that were ended to make room at a full bound, by bound (in_flight, body_budget).",
		}, []string{"bound"}),
		idleClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agent_gateway_idle_connections_closed_total",
			Help: "Idle connections closed to make room for a new one at http.max_connections.",
		}),
	}
	// Every bound's series exists from the start (at 0), so a rate over it
	// and the alert on it work before the first refusal.
	for _, bound := range []string{"connections", "connections_per_ip", "resets_per_ip", "in_flight", "in_flight_per_ip", "body_budget", "body_budget_per_ip"} {
		b.refusals.WithLabelValues(bound)
	}
	for _, bound := range []string{"in_flight", "body_budget"} {
		b.evictions.WithLabelValues(bound)
	}
	refused := func(bound string) { b.refusals.WithLabelValues(bound).Inc() }
	b.resets = middleware.NewAddressResets()
	b.stalls = middleware.NewStalls(func(bound string) { b.evictions.WithLabelValues(bound).Inc() })
	b.inFlight = middleware.NewInFlight(middleware.InFlightOptions{
		Max: cfg.MaxInFlight, MaxPerIP: cfg.MaxInFlightPerIP, Reserve: verifiedReserve(cfg.MaxInFlight),
		Stalls: b.stalls, Refused: refused, Exempt: isProbe,
	})
	b.bodies = middleware.NewBodyBudget(middleware.BodyBudgetOptions{
		Max: cfg.BodyBudgetBytes, MaxPerIP: cfg.BodyBudgetPerIPBytes, RouteCap: routeBodyCap,
		MinRate: bodyMinRate, Grace: bodyGrace, MaxTime: bodyReadTimeout, Stalls: b.stalls, Refused: refused,
	})
	reg.MustRegister(b.refusals, b.evictions, b.idleClosed,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agent_gateway_requests_in_flight",
			Help: "Requests being served now (bounded by http.max_in_flight; probes and /metrics not counted).",
		}, func() float64 { return float64(b.inFlight.Current()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agent_gateway_request_body_bytes_buffered",
			Help: "Request-body bytes reserved by requests being served now (bounded by http.body_budget_bytes).",
		}, func() float64 { return float64(b.bodies.Buffered()) }),
	)
	return b
}

// isProbe reports the requests no load bound refuses: the health probes
// and /metrics, which must answer most when the gateway is busiest (a
// refused liveness probe would get a busy replica restarted).
func isProbe(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// limitConnections wraps the API listener in the connection bounds and
// exposes the open-connection gauge.
func (g *Gateway) limitConnections(s *Server, plain bool) {
	l := newConnLimiter(s.listener, g.cfg, plain,
		func(bound string) { g.bounds.refusals.WithLabelValues(bound).Inc() }, g.bounds.idleClosed.Inc)
	l.cutOff = func(key string) bool { _, cut := g.bounds.resets.CutOff(key); return cut }
	s.listener = l
	s.api.ConnState = l.ConnState
	g.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "agent_gateway_open_connections",
		Help: "Connections open on the API listener now (bounded by http.max_connections).",
	}, func() float64 { return float64(l.Open()) }))
}
