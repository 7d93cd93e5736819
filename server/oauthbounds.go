package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// oauthMetrics count what the authorization server's bounds refused and
// the rows the OAuth purge left (docs/architecture.md#load-bounds: every
// bound is counted in /metrics; the purge's own counters are those of
// every scheduled purge, scheduledPurges).
// Refusals are registered on reg; the row counts on storeReg, which only
// the metrics listener serves.
type oauthMetrics struct {
	refusals *prometheus.CounterVec
	cimd     *prometheus.CounterVec
	rows     *prometheus.GaugeVec
}

func newOAuthMetrics(reg, storeReg prometheus.Registerer) *oauthMetrics {
	m := &oauthMetrics{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_oauth_refusals_total",
			Help: "OAuth requests refused by a bound before any work, by endpoint (authorize, register) and reason (rate_limited, oversized_parameter, repeated_parameter, invalid_redirect_uri, unsupported_response_mode).",
		}, []string{"endpoint", "reason"}),
		cimd: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_oauth_client_metadata_lookups_total",
			Help: "Lookups of Client ID Metadata Documents by result: fetched and fetch_failed are the outbound fetches; cache_hit, cached_failure and shared cost none; refused_url, rate_limited_address and rate_limited_total were refused before any fetch.",
		}, []string{"result"}),
		rows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agent_gateway_oauth_rows",
			Help: "OAuth rows in the store after the last purge tick, by table (clients, unused_clients, login_sessions, codes, tokens, grants).",
		}, []string{"table"}),
	}
	reg.MustRegister(m.refusals, m.cimd)
	storeReg.MustRegister(m.rows)
	return m
}

// countOAuthRows refreshes the OAuth row gauges: the OAuth purge's after
// step (scheduledPurges).
func (g *Gateway) countOAuthRows(ctx context.Context) {
	m := g.oauthMetrics
	c, err := g.store.CountOAuthRows(ctx)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Warn("counting OAuth rows failed", "error", err.Error())
		}
		return
	}
	for table, n := range map[string]int64{
		"clients": c.Clients, "unused_clients": c.UnusedClients, "login_sessions": c.LoginSessions,
		"codes": c.Codes, "tokens": c.Tokens, "grants": c.Consents,
	} {
		m.rows.WithLabelValues(table).Set(float64(n))
	}
}
