package store_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestPreparedReadsMatchText: the reads of every call answer through
// their prepared statements exactly what their text answered, for found,
// missing and revoked rows, and prepare each statement once.
func TestPreparedReadsMatchText(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		g := f.consent(t, s, "cli_x", "documents:read")
		live := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
		revoked := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
		if err := s.RevokeTokenHash(ctx, store.HashToken(revoked.Secret)); err != nil {
			t.Fatal(err)
		}
		legacy := try(s.IssueLegacyToken(ctx, f.project.ID, []string{"task"})).must(t)
		src := f.source(t, s, store.RoleRuntime, "docs/runtime.md")
		gone := f.source(t, s, store.RoleRuntime, "docs/gone.md")
		try(s.RevokeDocumentSource(ctx, f.project.ID, gone.ID)).must(t)
		cf := newCatalogFixture(t, s)
		profile, plan := devProfile(t, s, cf)
		w := try(s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: g.ID, Subject: "alice"})).must(t)

		reads := []struct {
			name string
			read func(store.Store) (any, error)
		}{
			{"access token found", func(s store.Store) (any, error) { return s.LookupAccessToken(ctx, live.Secret) }},
			{"access token not found", func(s store.Store) (any, error) { return s.LookupAccessToken(ctx, store.AccessTokenPrefix+"forged") }},
			{"access token revoked", func(s store.Store) (any, error) { return s.LookupAccessToken(ctx, revoked.Secret) }},
			{"legacy token found", func(s store.Store) (any, error) { return s.LookupLegacyToken(ctx, legacy.Secret) }},
			{"legacy token not found", func(s store.Store) (any, error) { return s.LookupLegacyToken(ctx, store.LegacyTokenPrefix+"forged") }},
			{"document source found", func(s store.Store) (any, error) { return s.GetDocumentSource(ctx, f.project.ID, src.ID) }},
			{"document source revoked", func(s store.Store) (any, error) { return s.GetDocumentSource(ctx, f.project.ID, gone.ID) }},
			{"document source not found", func(s store.Store) (any, error) { return s.GetDocumentSource(ctx, f.project.ID, "src_missing") }},
			{"document sources listed", func(s store.Store) (any, error) { return s.ListDocumentSources(ctx, f.project.ID, true) }},
			{"profiles listed", func(s store.Store) (any, error) { return s.ListProfiles(ctx, "", cf.projectA.ID) }},
			{"catalog plan", func(s store.Store) (any, error) { return s.CatalogPlan(ctx, cf.projectA.ID, profile.ID) }},
			{"catalog plan not found", func(s store.Store) (any, error) { return s.CatalogPlan(ctx, cf.projectB.ID, profile.ID) }},
			{"workflow found", func(s store.Store) (any, error) { return s.GetWorkflow(ctx, cf.projectA.ID, w.ID) }},
			{"workflow not found", func(s store.Store) (any, error) { return s.GetWorkflow(ctx, cf.projectB.ID, w.ID) }},
		}
		text := store.Unprepared(s)
		for _, r := range reads {
			t.Run(r.name, func(t *testing.T) {
				want, wantErr := r.read(text)
				prepared := store.Reprepared(t, s)
				var n int
				for i := range 2 { // preparing, then prepared
					got, err := r.read(prepared)
					if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) || errors.Is(err, store.ErrNotFound) != errors.Is(wantErr, store.ErrNotFound) {
						t.Fatalf("prepared = %+v, %v; text = %+v, %v", got, err, want, wantErr)
					}
					switch m := store.PreparedStatements(prepared); {
					case m == 0:
						t.Fatal("the read ran as text, not through a prepared statement")
					case i == 1 && m != n:
						t.Fatalf("%d statements prepared again on the second read", m-n)
					default:
						n = m
					}
				}
			})
		}
	})
}

// TestPreparedOnlyOnSQLite: the store prepares the reads of every call
// on SQLite, whose driver compiles an unprepared query's text each time,
// and leaves them to pgx on PostgreSQL, which prepares and caches them by
// itself in the mode the database URL chooses.
func TestPreparedOnlyOnSQLite(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		tok := try(s.IssueAccessToken(ctx, f.consent(t, s, "cli_x", "documents:read").ID, time.Hour)).must(t)
		try(s.LookupAccessToken(ctx, tok.Secret)).must(t)
		want := 1
		if isPostgres(s) {
			want = 0
		}
		if n := store.PreparedStatements(s); n != want {
			t.Errorf("%d statements prepared, want %d", n, want)
		}
	})
}

// TestPreparedReadFailures: a read whose statement cannot be prepared, or
// whose store has closed, fails with an error and never panics; a failed
// prepare is tried again on the next call.
func TestPreparedReadFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s store.Store) {
		s = store.Reprepared(t, s)
		f := newFixture(t, s)
		g := f.consent(t, s, "cli_x", "documents:read")
		tok := try(s.IssueAccessToken(context.Background(), g.ID, time.Hour)).must(t)

		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.LookupAccessToken(cancelled, tok.Secret); !errors.Is(err, context.Canceled) {
			t.Fatalf("lookup with a cancelled context = %v, want context.Canceled", err)
		}
		if n := store.PreparedStatements(s); n != 0 {
			t.Fatalf("%d statements prepared by a cancelled lookup, want 0", n)
		}
		ctx := context.Background()
		try(s.LookupAccessToken(ctx, tok.Secret)).must(t)
		if n := store.PreparedStatements(s); n != 1 {
			t.Fatalf("%d statements prepared after the failed prepare, want 1", n)
		}

		// Lookups racing Close succeed until they fail; none panics, and
		// none reads as a refused token.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 100_000 {
					if _, err := s.LookupAccessToken(ctx, tok.Secret); err != nil {
						if store.Answered(err) {
							t.Errorf("lookup racing Close = %v, want the store failing", err)
						}
						return
					}
				}
				t.Error("lookups kept succeeding after Close")
			})
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		_, err := s.LookupAccessToken(ctx, tok.Secret) // prepared before Close
		if err == nil || store.Answered(err) {
			t.Errorf("token lookup after Close = %v, want the store failing", err)
		}
		_, err = s.GetDocumentSource(ctx, f.project.ID, "src_x") // never prepared
		if err == nil || store.Answered(err) {
			t.Errorf("source read after Close = %v, want the store failing", err)
		}
	})
}
