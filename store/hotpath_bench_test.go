package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// The store reads an authenticated MCP call makes: the bearer's token
// lookup on every call, and the source lookup of git_document_get. Each
// runs on both backends (PostgreSQL skipped when no server answers).
//
//	go test ./store/ -run '^$' -bench 'LookupAccessToken|GetDocumentSource' -benchmem -count 3
func BenchmarkLookupAccessToken(b *testing.B) {
	eachBackend(b, func(b *testing.B, s store.Store) {
		f := newFixture(b, s)
		tok := try(s.IssueAccessToken(context.Background(), f.consent(b, s, "cli_bench", "documents:read").ID, time.Hour)).must(b)
		benchmarkRead(b, func(ctx context.Context) error {
			_, err := s.LookupAccessToken(ctx, tok.Secret)
			return err
		})
	})
}

func BenchmarkGetDocumentSource(b *testing.B) {
	eachBackend(b, func(b *testing.B, s store.Store) {
		f := newFixture(b, s)
		src := f.source(b, s, store.RoleRuntime, "docs/runtime.md")
		benchmarkRead(b, func(ctx context.Context) error {
			_, err := s.GetDocumentSource(ctx, f.project.ID, src.ID)
			return err
		})
	})
}

// eachBackend is storetest.Each for a benchmark.
func eachBackend(b *testing.B, fn func(b *testing.B, s store.Store)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, storetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { fn(b, storetest.Postgres(b)) })
}

// benchmarkRead times read, one call at a time, with a request's
// cancellable context. Besides ns/op it reports the process CPU per call,
// which a loaded, shared machine disturbs less; on PostgreSQL that leaves
// out the server's share.
func benchmarkRead(b *testing.B, read func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	before := gatewaytest.SelfCPU(b)
	for b.Loop() {
		if err := read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((gatewaytest.SelfCPU(b)-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
