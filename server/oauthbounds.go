package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
)

// oauthMetrics count what the authorization server's bounds refused and
// what the purge removed (docs/architecture.md#load-bounds: every bound is
// counted in /metrics).
// Refusals and purge runs are registered on reg; the row counts (rows
// left, rows purged) on storeReg, which only the metrics listener serves.
type oauthMetrics struct {
	refusals *prometheus.CounterVec
	cimd     *prometheus.CounterVec
	purge    purgeCounters
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
		purge: newPurgeCounters(reg, storeReg, "OAuth purge", "oauth",
			"Scheduled OAuth purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
			"Rows the OAuth purge deleted, by table (codes, login_sessions, tokens, clients, grants).",
			purgeTables),
		rows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agent_gateway_oauth_rows",
			Help: "OAuth rows in the store after the last purge tick, by table (clients, unused_clients, login_sessions, codes, tokens, grants).",
		}, []string{"table"}),
	}
	reg.MustRegister(m.refusals, m.cimd)
	storeReg.MustRegister(m.rows)
	return m
}

// startOAuthPurge purges the authorization server's expired rows now and
// then every oauth.purge_interval, until stop is called (serveGateway stops
// it before the store closes). Every replica runs it: each purge is
// idempotent row-level deletes, and on PostgreSQL replicas take turns
// (the store's advisory lock), so nothing is deleted twice and no replica
// waits for another.
func (g *Gateway) startOAuthPurge(ctx context.Context) (stop func()) {
	return every(ctx, g.cfg.OAuthPurgeInterval, g.purgeOAuth)
}

// purgeOAuth runs one purge and refreshes the row gauges.
func (g *Gateway) purgeOAuth(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	res, err := g.store.PurgeOAuth(ctx, store.PurgePolicy{
		UnusedClientTTL: g.cfg.OAuthUnusedClientTTL, RevokedConsentRetention: g.cfg.OAuthRevokedConsentRetention,
	})
	m := g.oauthMetrics
	if !m.purge.record(ctx, g.log, res, err) {
		return // shutting down
	}
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

// purgeTables are the tables PurgeOAuth reports, in log order.
var purgeTables = []string{"login_sessions", "codes", "tokens", "clients", "grants"}
