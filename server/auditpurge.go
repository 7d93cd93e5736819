package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
)

// auditPurgeTables are the tables the audit purge reports.
var auditPurgeTables = []string{"audit_records", "audit_checkpoints"}

// newAuditPurgeCounters counts the audit purge (audit.retention).
func newAuditPurgeCounters(reg, rowsReg prometheus.Registerer) purgeCounters {
	return newPurgeCounters(reg, rowsReg, "audit purge", "audit",
		"Scheduled audit purges by outcome: purged (this replica ran it), skipped (another replica held the purge lock), failed.",
		"Rows the audit purge deleted (records older than audit.retention, up to a kept signed checkpoint), by table (audit_records, audit_checkpoints).",
		auditPurgeTables)
}

// startAuditPurge deletes the audit records older than audit.retention
// now and then every audit.purge_interval, until stop is called (before
// the store closes); with audit.retention 0s, or the record off, it does
// nothing. Each chain keeps the signed checkpoint its purge stopped at, so
// `admin audit verify` runs across the gap (docs/audit.md).
func (g *Gateway) startAuditPurge(ctx context.Context) (stop func()) {
	if g.auditPurge == nil || g.cfg.AuditRetention <= 0 {
		return func() {}
	}
	return every(ctx, g.cfg.AuditPurgeInterval, g.purgeAudit)
}

// purgeAudit runs one purge within purgeTimeout.
func (g *Gateway) purgeAudit(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	res, err := g.store.PurgeAuditRecords(ctx, store.AuditPurgePolicy{Before: time.Now().Add(-g.cfg.AuditRetention)})
	g.auditPurge.record(ctx, g.log, res, err, "retention", g.cfg.AuditRetention.String())
}
