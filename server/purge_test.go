package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/audit"
)

// TestPurgeCountersRecord: each outcome of a purge run is counted once;
// rows are counted whatever the outcome, including those a batched purge
// committed before it failed; a run cut short by shutdown with nothing
// deleted counts nothing; failures are logged with the counts.
func TestPurgeCountersRecord(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	down := errors.New("database is down")
	for _, c := range []struct {
		name    string
		ctx     context.Context
		res     store.PurgeResult
		err     error
		counted bool
		outcome string
		rows    float64
		log     string
	}{
		{"purged", context.Background(), store.PurgeResult{Ran: true, Deleted: map[string]int64{"workflows": 2, "workflow_layers": 14}}, nil, true, "purged", 2, "level=INFO msg=\"workflow purge\" workflows=2 workflow_layers=14 retention=720h"},
		{"skipped", context.Background(), store.PurgeResult{Deleted: map[string]int64{}}, nil, true, "skipped", 0, "skipped"},
		{"failed after a batch", context.Background(), store.PurgeResult{Ran: true, Deleted: map[string]int64{"workflows": 3, "workflow_layers": 21}}, down, true, "failed", 3, "level=WARN msg=\"workflow purge failed\" workflows=3 workflow_layers=21 error=\"database is down\""},
		{"failed", context.Background(), store.PurgeResult{}, down, true, "failed", 0, "workflow purge failed"},
		{"shutting down", canceled, store.PurgeResult{}, context.Canceled, false, "", 0, ""},
		{"shutting down after a batch", canceled, store.PurgeResult{Ran: true, Deleted: map[string]int64{"workflows": 1}}, context.Canceled, true, "failed", 1, "failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			pc := newPurgeCounters(reg, reg, *purgeNamed(t, (&Gateway{}).scheduledPurges(), "workflow purge"))
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			if got := pc.record(c.ctx, log, c.res, c.err, "retention", "720h"); got != c.counted {
				t.Fatalf("record = %v, want %v", got, c.counted)
			}
			for _, outcome := range []string{"purged", "skipped", "failed"} {
				want := 0.0
				if outcome == c.outcome {
					want = 1
				}
				if got := counterValue(t, pc.runs.WithLabelValues(outcome)); got != want {
					t.Errorf("runs{outcome=%s} = %v, want %v", outcome, got, want)
				}
			}
			if got := counterValue(t, pc.rows.WithLabelValues("workflows")); got != c.rows {
				t.Errorf("rows{table=workflows} = %v, want %v", got, c.rows)
			}
			if !strings.Contains(logs.String(), c.log) || (c.log == "" && logs.Len() != 0) {
				t.Errorf("log = %q, want it to contain %q", logs.String(), c.log)
			}
		})
	}
}

// purgeNamed is the purge of ps called name.
func purgeNamed(t *testing.T, ps []scheduledPurge, name string) *scheduledPurge {
	t.Helper()
	for i := range ps {
		if ps[i].name == name {
			return &ps[i]
		}
	}
	t.Fatalf("no scheduled purge %q", name)
	return nil
}

// counterValue reads one counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestAuditPurgeWired: with audit.mode on and audit.retention set, the
// gateway's scheduled audit purge deletes a chain's records older than the
// retention up to a checkpoint, keeps that checkpoint, and counts the run
// and the rows.
func TestAuditPurgeWired(t *testing.T) {
	cfg := Default()
	cfg.DataDir = t.TempDir()
	cfg.AuditMode = audit.BestEffort
	cfg.AuditRetention = time.Hour
	cfg.PublicURL = "http://127.0.0.1:8080"
	g, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	var rows []store.AuditRow
	for i := int64(1); i <= 4; i++ {
		rows = append(rows, store.AuditRow{Writer: "w_old", Seq: i, At: old.Add(time.Duration(i) * time.Second), Record: "{}", Hash: strings.Repeat("0", 64)})
	}
	if err := g.store.AppendAuditRecords(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := g.store.AddAuditCheckpoint(ctx, store.AuditCheckpoint{Writer: "w_old", Seq: 3, Head: strings.Repeat("0", 64), At: old, KeyID: "k", Signature: "s"}); err != nil {
		t.Fatal(err)
	}
	auditPurge := purgeNamed(t, g.purges, "audit purge")
	auditPurge.tick(ctx, g.log)
	left, err := g.store.ListAuditRecords(ctx, "w_old", 0, 10)
	if err != nil || len(left) != 1 || left[0].Seq != 4 {
		t.Fatalf("records left %+v (%v), want record 4 only: it is after the last checkpoint", left, err)
	}
	if cps, _ := g.store.ListAuditCheckpoints(ctx, "w_old"); len(cps) != 1 || cps[0].Seq != 3 {
		t.Fatalf("checkpoints left %+v, want the anchor at 3", cps)
	}
	if got := counterValue(t, auditPurge.counters.runs.WithLabelValues("purged")); got != 1 {
		t.Fatalf("purge runs = %v, want 1", got)
	}
	if got := counterValue(t, auditPurge.counters.rows.WithLabelValues("audit_records")); got != 3 {
		t.Fatalf("purged rows = %v, want 3", got)
	}
}
