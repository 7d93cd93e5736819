package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// BenchmarkAuditedCall is the audit record's cost through the whole
// in-process router: the same authenticated calls with audit.mode off and
// best_effort, side by side in one run, each reporting the process's
// user+system CPU per call (cpu-µs/call; the writer goroutine, SQLite and
// the collector included). The difference of a pair is the CPU the record
// adds to a call. The emulator serves in the same process, so its work is
// in both figures of a pair and the ratio understates the gateway's share;
// docs/performance.md sets the difference against the gateway's own CPU
// per call measured by test/load.
//
//	go test ./server/ -run '^$' -bench BenchmarkAuditedCall -benchtime 3000x -count 3
func BenchmarkAuditedCall(b *testing.B) {
	emu, d := benchEmulator(b)
	calls := []struct{ name, tool, args string }{
		{"get_repository", "get_repository", fmt.Sprintf(`{"owner":%q,"repo":%q}`, d.Owner, d.PublicRepo)},
		{"diff-page", "get_pull_request_diff", fmt.Sprintf(`{"owner":%q,"repo":%q,"index":%d}`, d.Owner, d.PublicRepo, d.OpenPull)},
	}
	for _, c := range calls {
		for _, mode := range []audit.Mode{audit.Off, audit.BestEffort} {
			b.Run(c.name+"/"+string(mode), func(b *testing.B) {
				benchAuditedCalls(b, emu, mode, d.ReaderToken, c.tool, c.args)
			})
		}
	}
}

func benchAuditedCalls(b *testing.B, emu *forgejoemu.Emulator, mode audit.Mode, bearer, tool, args string) {
	cfg := Default()
	cfg.DataDir = b.TempDir()
	cfg.ReadPerMinute = 1 << 30
	cfg.ForgejoOrigin, _ = upstream.ParseOrigin(emu.URL())
	cfg.PublicURL = "http://127.0.0.1:8080"
	cfg.IPCeilingPerMinute = 1 << 30
	cfg.AuditMode = mode
	cfg.AuditCheckpointInterval = time.Minute
	g, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	before := gatewaytest.SelfCPU(b)
	benchCalls(b, g.Handler(), "/mcp/forgejo", bearer, tool, args, "")
	// Closing writes what is queued: the writer's work is the call's.
	if err := g.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((gatewaytest.SelfCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/call")
	if mode != audit.Off {
		if dropped := droppedRecords(b, g); dropped != 0 {
			b.Fatalf("%v records dropped: the figure would leave their cost out", dropped)
		}
	}
}

// droppedRecords is agent_gateway_audit_records_total{result="queue_full"}.
func droppedRecords(b *testing.B, g *Gateway) float64 {
	mfs, err := g.registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "agent_gateway_audit_records_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "queue_full" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	b.Fatal(`no agent_gateway_audit_records_total{result="queue_full"}`)
	return 0
}
