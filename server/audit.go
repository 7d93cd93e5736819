package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store/audit"
)

// auditCloseTimeout bounds the last write and checkpoint at shutdown.
const auditCloseTimeout = 15 * time.Second

// wireAudit starts the audit record (docs/audit.md) when audit.mode is
// not off: one writer, one chain for this process, its checkpoints signed
// with the key in data_dir, and every call of the toolsets wired recorded
// (both HTTP toolsets; the Forgejo one over stdio). It runs after the
// store is open; its closer runs before the store's, so what is queued at
// shutdown is written.
func (g *Gateway) wireAudit() error {
	if g.cfg.AuditMode == "" || g.cfg.AuditMode == audit.Off {
		return nil
	}
	key, err := audit.LoadSigningKey(g.cfg.DataDir)
	if err != nil {
		return err
	}
	fingerprint, err := audit.LoadFingerprintKey(g.cfg.DataDir)
	if err != nil {
		return err
	}
	records := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_gateway_audit_records_total",
		Help: "Audit records by result: written (stored in the chain), queue_full (dropped, never queued: audit.mode best_effort drops, required refuses the call), write_failed (queued, but the store refused the batch).",
	}, []string{"result"})
	checkpoints := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_gateway_audit_checkpoints_total",
		Help: "Signed audit checkpoints by outcome (ok, failed).",
	}, []string{"outcome"})
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_gateway_audit_calls_total",
		Help: "Tool calls the audit record saw, by principal kind (oauth, legacy_token, forgejo_bearer, process, anonymous) and outcome answered (ok or the stable error code): who is calling, and with what result, without a label per principal.",
	}, []string{"principal_kind", "outcome"})
	g.registry.MustRegister(records, checkpoints, calls)
	for _, r := range []string{"written", "queue_full", "write_failed"} {
		records.WithLabelValues(r)
	}
	for _, o := range []string{"ok", "failed"} {
		checkpoints.WithLabelValues(o)
	}
	w := audit.StartWriter(audit.WriterConfig{
		Store: g.store, Key: key, CheckpointInterval: g.cfg.AuditCheckpointInterval, Log: g.log,
		Counters: audit.Counters{
			Written:    func(n int) { records.WithLabelValues("written").Add(float64(n)) },
			Dropped:    func(reason string, n int) { records.WithLabelValues(reason).Add(float64(n)) },
			Checkpoint: func(outcome string) { checkpoints.WithLabelValues(outcome).Inc() },
		},
	})
	g.log.Info("audit record on", "mode", string(g.cfg.AuditMode), "writer", w.ID())
	rec := audit.NewRecorder(g.cfg.AuditMode, w, fingerprint)
	rec.Anonymous = g.cfg.AuditAnonymous
	rec.Calls = func(kind, outcome string) { calls.WithLabelValues(kind, outcome).Inc() }
	g.forgejoC.SetAuditor(rec)
	if g.documentsC != nil {
		g.documentsC.SetAuditor(rec)
	}
	g.closers = append(g.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), auditCloseTimeout)
		defer cancel()
		return w.Close(ctx)
	})
	return nil
}
