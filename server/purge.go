package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
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

// purgeCounters count one scheduled purge (OAuth rows, workflows): its runs
// by outcome and the rows it deleted by table. Every bound is counted in
// /metrics (docs/architecture.md#load-bounds), and a purge is what keeps one.
type purgeCounters struct {
	name   string   // in log lines: "OAuth purge", "workflow purge"
	tables []string // the tables its result reports, in log order
	runs   *prometheus.CounterVec
	rows   *prometheus.CounterVec
}

// newPurgeCounters registers agent_gateway_<subject>_purge_runs_total on
// reg and agent_gateway_<subject>_purged_rows_total on rowsReg: how many
// rows a deployment purges tells how many it holds, so the row counts go
// where the store's other counts are served (the metrics listener only).
func newPurgeCounters(reg, rowsReg prometheus.Registerer, name, subject, runsHelp, rowsHelp string, tables []string) purgeCounters {
	c := purgeCounters{
		name: name, tables: tables,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_" + subject + "_purge_runs_total", Help: runsHelp,
		}, []string{"outcome"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_" + subject + "_purged_rows_total", Help: rowsHelp,
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
