package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
)

// oauthMetrics count what the authorization server's bounds refused and
// what the purge removed (DESIGN §4: every bound is counted in /metrics).
type oauthMetrics struct {
	refusals   *prometheus.CounterVec
	purgeRuns  *prometheus.CounterVec
	purgedRows *prometheus.CounterVec
	rows       *prometheus.GaugeVec
}

func newOAuthMetrics(reg prometheus.Registerer) *oauthMetrics {
	m := &oauthMetrics{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_oauth_refusals_total",
			Help: "OAuth requests refused by a bound before any work, by endpoint (authorize, register) and reason (rate_limited, oversized_parameter, repeated_parameter, invalid_redirect_uri, unsupported_response_mode).",
		}, []string{"endpoint", "reason"}),
		purgeRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_oauth_purge_runs_total",
			Help: "Scheduled OAuth purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
		}, []string{"outcome"}),
		purgedRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_oauth_purged_rows_total",
			Help: "Rows the OAuth purge deleted, by table (codes, login_sessions, tokens, clients, grants).",
		}, []string{"table"}),
		rows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agent_gateway_oauth_rows",
			Help: "OAuth rows in the store after the last purge tick, by table (clients, unused_clients, login_sessions, codes, tokens, grants).",
		}, []string{"table"}),
	}
	reg.MustRegister(m.refusals, m.purgeRuns, m.purgedRows, m.rows)
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

// every runs tick now and then every interval on its own goroutine, until
// stop is called; stop returns once the running tick has returned.
func every(ctx context.Context, interval time.Duration, tick func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// purgeTimeout bounds one purge tick.
const purgeTimeout = time.Minute

// purgeOAuth runs one purge and refreshes the row gauges.
func (g *Gateway) purgeOAuth(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	res, err := g.store.PurgeOAuth(ctx, store.PurgePolicy{
		UnusedClientTTL: g.cfg.OAuthUnusedClientTTL, RevokedGrantRetention: g.cfg.OAuthRevokedGrantRetention,
	})
	m := g.oauthMetrics
	switch {
	case err != nil && ctx.Err() != nil:
		return // shutting down
	case err != nil:
		m.purgeRuns.WithLabelValues("failed").Inc()
		g.log.Warn("OAuth purge failed", "error", err.Error())
	case !res.Ran:
		m.purgeRuns.WithLabelValues("skipped").Inc()
		g.log.Debug("OAuth purge skipped: another replica is purging")
	default:
		m.purgeRuns.WithLabelValues("purged").Inc()
		attrs := []any{}
		var total int64
		for _, table := range purgeTables {
			n := res.Deleted[table]
			m.purgedRows.WithLabelValues(table).Add(float64(n))
			attrs = append(attrs, table, n)
			total += n
		}
		level := slog.LevelDebug
		if total > 0 {
			level = slog.LevelInfo
		}
		g.log.Log(ctx, level, "OAuth purge", attrs...)
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
		"codes": c.Codes, "tokens": c.Tokens, "grants": c.Grants,
	} {
		m.rows.WithLabelValues(table).Set(float64(n))
	}
}

// purgeTables are the tables PurgeOAuth reports, in log order.
var purgeTables = []string{"login_sessions", "codes", "tokens", "clients", "grants"}
