package server

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
)

// workflowMetrics count the workflow purge's runs and what it removed, as
// the OAuth purge's are counted: the bound on stored workflows is only
// visible if its work is.
type workflowMetrics struct {
	purgeRuns  *prometheus.CounterVec
	purgedRows *prometheus.CounterVec
}

// workflowPurgeTables are the tables PurgeWorkflows reports, in log order.
var workflowPurgeTables = []string{"workflows", "workflow_layers"}

func newWorkflowMetrics(reg prometheus.Registerer) *workflowMetrics {
	m := &workflowMetrics{
		purgeRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_workflow_purge_runs_total",
			Help: "Scheduled workflow purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
		}, []string{"outcome"}),
		purgedRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_workflow_purged_rows_total",
			Help: "Rows the workflow purge deleted (workflows older than catalog.workflow_retention), by table (workflows, workflow_layers).",
		}, []string{"table"}),
	}
	reg.MustRegister(m.purgeRuns, m.purgedRows)
	return m
}

// startWorkflowPurge deletes the workflows older than
// catalog.workflow_retention now and then every
// catalog.workflow_purge_interval, until stop is called (before the store
// closes). Like the OAuth purge, every replica runs it and they take turns
// on PostgreSQL; a tick that runs out of time leaves the rest to the next.
func (g *Gateway) startWorkflowPurge(ctx context.Context) (stop func()) {
	return every(ctx, g.cfg.WorkflowPurgeInterval, g.purgeWorkflows)
}

// purgeWorkflows runs one purge, in batches, within purgeTimeout.
func (g *Gateway) purgeWorkflows(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	res, err := g.store.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: g.cfg.WorkflowRetention})
	m := g.workflowMetrics
	// Batches committed before an error are deleted all the same.
	attrs := []any{}
	var total int64
	for _, table := range workflowPurgeTables {
		n := res.Deleted[table]
		m.purgedRows.WithLabelValues(table).Add(float64(n))
		attrs = append(attrs, table, n)
		total += n
	}
	switch {
	case err != nil && ctx.Err() != nil && total == 0:
		return // shutting down
	case err != nil:
		m.purgeRuns.WithLabelValues("failed").Inc()
		g.log.Warn("workflow purge failed", append(attrs, "error", err.Error())...)
	case !res.Ran:
		m.purgeRuns.WithLabelValues("skipped").Inc()
		g.log.Debug("workflow purge skipped: another replica is purging")
	default:
		m.purgeRuns.WithLabelValues("purged").Inc()
		level := slog.LevelDebug
		if total > 0 {
			level = slog.LevelInfo
		}
		g.log.Log(ctx, level, "workflow purge", append(attrs, "retention", g.cfg.WorkflowRetention.String())...)
	}
}
