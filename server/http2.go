package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// http2MaxConcurrentStreams bounds the streams one HTTP/2 connection may
// have open, and so the handlers net/http runs for it at once (a stream
// reset before its handler started never runs one). Go's default is 250;
// an MCP client needs a handful.
const http2MaxConcurrentStreams = 100

// configureHTTP2 sets the API server's HTTP/2 options (served over TLS,
// where ALPN offers h2): a bound on concurrent streams, and a ledger per
// connection that the reset guard (resetGuard) keeps. Kept apart from the
// server's timeouts (newHTTPServer).
func configureHTTP2(srv *http.Server) {
	srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: http2MaxConcurrentStreams}
	srv.ConnContext = middleware.WithStreamLedger
}

// resetGuard is the rapid-reset defence (middleware.ResetGuard), per
// connection and per client key (the listener refuses a cut-off key's
// connections, limitConnections), with its series:
// agent_gateway_http2_streams_reset_total,
// agent_gateway_http2_connections_closed_total,
// agent_gateway_http2_addresses_cut_off_total and the load refusals by
// bound resets_per_ip.
func (g *Gateway) resetGuard() func(http.Handler) http.Handler {
	resets := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agent_gateway_http2_streams_reset_total",
		Help: "HTTP/2 streams whose client reset them (or left) before their handler returned.",
	})
	closed := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agent_gateway_http2_connections_closed_total",
		Help: "HTTP/2 connections closed for resetting far more streams than they completed.",
	})
	cutOff := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agent_gateway_http2_addresses_cut_off_total",
		Help: "Client addresses cut off for a while because their HTTP/2 connections together reset far more streams than they completed.",
	})
	g.registry.MustRegister(resets, closed, cutOff)
	return middleware.ResetGuard(middleware.ResetGuardOptions{
		Reset: resets.Inc,
		Closed: func(r *http.Request, n, completed int) {
			closed.Inc()
			rec := middleware.RecordFromContext(r.Context())
			g.log.Warn("HTTP/2 connection closed: it reset far more streams than it completed",
				"client_ip", rec.ClientIP(), "resets", n, "completed", completed)
		},
		Addresses: g.bounds.resets,
		CutOff: func(r *http.Request, net int) {
			cutOff.Inc()
			rec := middleware.RecordFromContext(r.Context())
			g.log.Warn("client address cut off: its HTTP/2 connections reset far more streams than they completed",
				"client_ip", rec.ClientIP(), "client_key", rec.ClientKey(), "net_resets", net, "for", middleware.ResetCutOff.String())
		},
		Refused: func(bound string) { g.bounds.refusals.WithLabelValues(bound).Inc() },
	})
}
