package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
)

// workflowPurgeTables are the tables PurgeWorkflows reports, in log order.
var workflowPurgeTables = []string{"workflows", "workflow_layers"}

// newWorkflowPurgeCounters count the workflow purge as the OAuth purge is
// counted: the bound on stored workflows is only visible if its work is.
func newWorkflowPurgeCounters(reg, rowsReg prometheus.Registerer) purgeCounters {
	return newPurgeCounters(reg, rowsReg, "workflow purge", "workflow",
		"Scheduled workflow purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
		"Rows the workflow purge deleted (workflows older than catalog.workflow_retention), by table (workflows, workflow_layers).",
		workflowPurgeTables)
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
	g.workflowPurge.record(ctx, g.log, res, err, "retention", g.cfg.WorkflowRetention.String())
}
