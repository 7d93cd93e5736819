package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/audit"
)

// purgeTimeout bounds one purge tick.
const purgeTimeout = time.Minute

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

// scheduledPurge is one purge the gateway runs while it serves, now and
// then every interval, on every replica: each purge is idempotent deletes
// on the rows' own times, and on PostgreSQL replicas take turns under the
// purge's own advisory lock, so nothing is deleted twice and no replica
// waits for another. It says what the purge is called and counts, when it
// runs, the store call that does it, and what follows it. Adding a purge
// is one entry in (*Gateway).scheduledPurges.
type scheduledPurge struct {
	name    string // in log lines: "OAuth purge", "workflow purge", "audit purge"
	subject string // in metric names: agent_gateway_<subject>_purge_runs_total, …
	// runsHelp and rowsHelp are the help of its two counters.
	runsHelp, rowsHelp string
	tables             []string // the tables its result reports, in log order
	interval           time.Duration
	// on is whether this deployment runs it; one that does not has
	// neither its series nor its ticks.
	on bool
	// run deletes what has expired; the tick bounds it by purgeTimeout.
	run func(context.Context) (store.PurgeResult, error)
	// attrs follow the counts in the log line of a run that purged.
	attrs []any
	// after, when set, follows every run that was counted (not one cut
	// short by shutdown).
	after func(context.Context)
	// counters are registered by wirePurges.
	counters purgeCounters
}

// scheduledPurges are the purges a gateway serving g.cfg may run, on or not;
// wirePurges keeps those that are on.
func (g *Gateway) scheduledPurges() []scheduledPurge {
	return []scheduledPurge{{
		// The authorization server's expired rows, so what anonymous
		// callers can make it store stays bounded; after each run the
		// row gauges (agent_gateway_oauth_rows) are refreshed.
		name: "OAuth purge", subject: "oauth",
		runsHelp: "Scheduled OAuth purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
		rowsHelp: "Rows the OAuth purge deleted, by table (codes, login_sessions, tokens, clients, grants).",
		tables:   []string{"login_sessions", "codes", "tokens", "clients", "grants"},
		interval: g.cfg.OAuthPurgeInterval, on: true,
		run: func(ctx context.Context) (store.PurgeResult, error) {
			return g.store.PurgeOAuth(ctx, store.PurgePolicy{
				UnusedClientTTL: g.cfg.OAuthUnusedClientTTL, RevokedConsentRetention: g.cfg.OAuthRevokedConsentRetention,
			})
		},
		after: g.countOAuthRows,
	}, {
		// The workflows older than catalog.workflow_retention, in
		// batches; a tick that runs out of time leaves the rest to the
		// next. The bound on stored workflows is only visible if its work
		// is counted.
		name: "workflow purge", subject: "workflow",
		runsHelp: "Scheduled workflow purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
		rowsHelp: "Rows the workflow purge deleted (workflows older than catalog.workflow_retention), by table (workflows, workflow_layers).",
		tables:   []string{"workflows", "workflow_layers"},
		interval: g.cfg.WorkflowPurgeInterval, on: true,
		run: func(ctx context.Context) (store.PurgeResult, error) {
			return g.store.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: g.cfg.WorkflowRetention})
		},
		attrs: []any{"retention", g.cfg.WorkflowRetention.String()},
	}, {
		// The audit records older than audit.retention, with the record
		// on and a retention set (0s keeps every record). Each chain keeps
		// the signed checkpoint its purge stopped at, so `admin audit
		// verify` runs across the gap (docs/audit.md).
		name: "audit purge", subject: "audit",
		runsHelp: "Scheduled audit purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
		rowsHelp: "Rows the audit purge deleted (records older than audit.retention, up to a kept signed checkpoint), by table (audit_records, audit_checkpoints).",
		tables:   []string{"audit_records", "audit_checkpoints"},
		interval: g.cfg.AuditPurgeInterval,
		on:       g.cfg.AuditMode != "" && g.cfg.AuditMode != audit.Off && g.cfg.AuditRetention > 0,
		run: func(ctx context.Context) (store.PurgeResult, error) {
			return g.store.PurgeAuditRecords(ctx, store.AuditPurgePolicy{Before: time.Now().Add(-g.cfg.AuditRetention)})
		},
		attrs: []any{"retention", g.cfg.AuditRetention.String()},
	}}
}

// wirePurges registers the counters of the scheduled purges that are on
// and keeps those purges for startPurges.
func (g *Gateway) wirePurges() {
	for _, p := range g.scheduledPurges() {
		if !p.on {
			continue
		}
		p.counters = newPurgeCounters(g.registry, g.storeRegistry, p)
		g.purges = append(g.purges, p)
	}
}

// startPurges runs each wired purge now and then every its interval, until
// stop is called (serveGateway calls it before the store closes).
func (g *Gateway) startPurges(ctx context.Context) (stop func()) {
	stops := make([]func(), 0, len(g.purges))
	for i := range g.purges {
		p := &g.purges[i]
		stops = append(stops, every(ctx, p.interval, func(ctx context.Context) { p.tick(ctx, g.log) }))
	}
	return func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
}

// tick runs one purge within purgeTimeout, counts it, and runs its after
// step.
func (p *scheduledPurge) tick(ctx context.Context, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	res, err := p.run(ctx)
	if p.counters.record(ctx, log, res, err, p.attrs...) && p.after != nil {
		p.after(ctx)
	}
}

// purgeCounters count one scheduled purge: its runs by outcome and the
// rows it deleted by table. Every bound is counted in /metrics
// (docs/architecture.md#load-bounds), and a purge is what keeps one.
type purgeCounters struct {
	name   string   // scheduledPurge.name
	tables []string // scheduledPurge.tables
	runs   *prometheus.CounterVec
	rows   *prometheus.CounterVec
}

// newPurgeCounters registers agent_gateway_<subject>_purge_runs_total on
// reg and agent_gateway_<subject>_purged_rows_total on rowsReg: how many
// rows a deployment purges tells how many it holds, so the row counts go
// where the store's other counts are served (the metrics listener only).
func newPurgeCounters(reg, rowsReg prometheus.Registerer, p scheduledPurge) purgeCounters {
	c := purgeCounters{
		name: p.name, tables: p.tables,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_" + p.subject + "_purge_runs_total", Help: p.runsHelp,
		}, []string{"outcome"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_" + p.subject + "_purged_rows_total", Help: p.rowsHelp,
		}, []string{"table"}),
	}
	reg.MustRegister(c.runs)
	rowsReg.MustRegister(c.rows)
	return c
}

// zero creates every series at 0 (zeroKnownSeries).
func (c purgeCounters) zero() {
	for _, outcome := range []string{"purged", "skipped", "failed"} {
		c.runs.WithLabelValues(outcome)
	}
	for _, table := range c.tables {
		c.rows.WithLabelValues(table)
	}
}

// record counts and logs one run: the rows it deleted (a purge in batches
// reports those of the batches it committed before failing, and they
// count), and its outcome: failed, skipped (another replica held the
// lock) or purged. It reports false, counting nothing, for a run that
// failed only because the gateway is shutting down.
func (c purgeCounters) record(ctx context.Context, log *slog.Logger, res store.PurgeResult, err error, attrs ...any) bool {
	var counts []any
	var total int64
	for _, table := range c.tables {
		n := res.Deleted[table]
		counts = append(counts, table, n)
		total += n
	}
	if err != nil && ctx.Err() != nil && total == 0 {
		return false
	}
	for _, table := range c.tables {
		c.rows.WithLabelValues(table).Add(float64(res.Deleted[table]))
	}
	switch {
	case err != nil:
		c.runs.WithLabelValues("failed").Inc()
		log.Warn(c.name+" failed", append(counts, "error", err.Error())...)
	case !res.Ran:
		c.runs.WithLabelValues("skipped").Inc()
		log.Debug(c.name + " skipped: another replica is purging")
	default:
		c.runs.WithLabelValues("purged").Inc()
		level := slog.LevelDebug
		if total > 0 {
			level = slog.LevelInfo
		}
		log.Log(ctx, level, c.name, append(counts, attrs...)...)
	}
	return true
}
