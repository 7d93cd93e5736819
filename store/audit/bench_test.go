package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// BenchmarkAuditRecord is the CPU the audit record adds to one call in
// best_effort on SQLite: building the record of a call, queueing it, and
// the writer's share of encoding, chaining and the batched insert. Two
// calls: a diff page (a 48,000-byte result identified by its diff
// evidence, not hashed again) and another tool's 200-byte result (hashed).
// It reports the process's user+system CPU per record (cpu-µs/record),
// which includes the writer goroutine, the SQLite driver and the
// collector, to compare with the gateway CPU of a call
// (docs/performance.md).
//
//	go test ./store/audit/ -run '^$' -bench BenchmarkAuditRecord -benchtime 20000x
func BenchmarkAuditRecord(b *testing.B) {
	b.Run("diff-page", func(b *testing.B) { benchmarkAuditRecord(b, 48000, true) })
	b.Run("result-200B", func(b *testing.B) { benchmarkAuditRecord(b, 200, false) })
}

func benchmarkAuditRecord(b *testing.B, size int, diff bool) {
	st := storetest.SQLite(b)
	w := StartWriter(WriterConfig{Store: st, Key: testKey(b), CheckpointInterval: time.Minute, QueueSize: b.N + 1})
	r := NewRecorder(BestEffort, w, []byte("fingerprint-key"))
	text := strings.Repeat("x", size)
	ctx := WithEvidence(middleware.WithPrincipal(middleware.WithRecord(context.Background(), &middleware.Record{}), middleware.NewPassthrough("tok")))
	tool, args := "get_repository", []byte(`{"owner":"o","repo":"r"}`)
	if diff {
		SetDiff(ctx, DiffEvidence{DiffSHA256: strings.Repeat("a", 64), DiffBytes: 1 << 20, BaseOID: strings.Repeat("b", 40), HeadOID: strings.Repeat("c", 40), ChunkBytes: 36000, ChunkSHA256: strings.Repeat("d", 64)})
		tool, args = "get_pull_request_diff", []byte(`{"owner":"o","repo":"r","index":7}`)
	}
	before := gatewaytest.SelfCPU(b)
	b.ResetTimer()
	for range b.N {
		if err := r.Record(ctx, Call{Toolset: "agent-gateway-forgejo", Tool: tool, Args: args, Outcome: "ok", Result: answered(text)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((gatewaytest.SelfCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/record")
}
