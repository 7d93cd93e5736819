package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// loadBounds are the gateway-wide bounds on what callers can make it hold
// at once (docs/architecture.md#load-bounds): requests in flight and buffered
// body bytes here, open connections on the listener (connLimiter). Each is a
// gauge, and every refusal a count by bound, in /metrics.
type loadBounds struct {
	inFlight   *middleware.InFlight
	bodies     *middleware.BodyBudget
	refusals   *prometheus.CounterVec
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
			Help: "Requests and connections refused because a load bound was reached, by bound (connections, connections_per_ip, in_flight, in_flight_per_ip, body_budget, body_budget_per_ip).",
		}, []string{"bound"}),
		idleClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agent_gateway_idle_connections_closed_total",
			Help: "Idle connections closed to make room for a new one at http.max_connections.",
		}),
	}
	// Every bound's series exists from the start (at 0), so a rate over it
	// and the alert on it work before the first refusal.
	for _, bound := range []string{"connections", "connections_per_ip", "in_flight", "in_flight_per_ip", "body_budget", "body_budget_per_ip"} {
		b.refusals.WithLabelValues(bound)
	}
	refused := func(bound string) { b.refusals.WithLabelValues(bound).Inc() }
	b.inFlight = middleware.NewInFlight(middleware.InFlightOptions{
		Max: cfg.MaxInFlight, MaxPerIP: cfg.MaxInFlightPerIP, Refused: refused, Exempt: isProbe,
	})
	b.bodies = middleware.NewBodyBudget(middleware.BodyBudgetOptions{
		Max: cfg.BodyBudgetBytes, MaxPerIP: cfg.BodyBudgetPerIPBytes, Refused: refused,
	})
	reg.MustRegister(b.refusals, b.idleClosed,
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
	s.listener = l
	s.api.ConnState = l.ConnState
	g.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "agent_gateway_open_connections",
		Help: "Connections open on the API listener now (bounded by http.max_connections).",
	}, func() float64 { return float64(l.Open()) }))
}
