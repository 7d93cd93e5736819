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

// resetGuard is the rapid-reset defence (middleware.ResetGuard) with its
// series: agent_gateway_http2_streams_reset_total and
// agent_gateway_http2_connections_closed_total.
func (g *Gateway) resetGuard() func(http.Handler) http.Handler {
	resets := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agent_gateway_http2_streams_reset_total",
		Help: "HTTP/2 streams whose client reset them (or left) before their handler returned.",
	})
	closed := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agent_gateway_http2_connections_closed_total",
		Help: "HTTP/2 connections closed for resetting far more streams than they completed.",
	})
	g.registry.MustRegister(resets, closed)
	return middleware.ResetGuard(middleware.ResetGuardOptions{
		Reset: resets.Inc,
		Closed: func(r *http.Request, n, completed int) {
			closed.Inc()
			rec := middleware.RecordFromContext(r.Context())
			g.log.Warn("HTTP/2 connection closed: it reset far more streams than it completed",
				"client_ip", rec.ClientIP(), "resets", n, "completed", completed)
		},
	})
}
