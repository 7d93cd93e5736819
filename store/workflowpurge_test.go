package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

const retention = 30 * 24 * time.Hour

// workflowScene stores old workflows (created 40 days ago) and young ones
// (a day ago) in project A of a fresh catalog fixture, each with the four
// layers of its plan, and puts the clock back to now.
func workflowScene(t *testing.T, s store.Store, old, young int) (catalogFixture, []store.Workflow, []store.Workflow) {
	t.Helper()
	ctx := context.Background()
	f := newCatalogFixture(t, s)
	_, plan := devProfile(t, s, f)
	real := time.Now().UTC().Truncate(time.Microsecond)
	defer store.SetClock(s, func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) })
	dispatch := func(age time.Duration, n int) []store.Workflow {
		var out []store.Workflow
		for i := range n {
			// A microsecond apart, so "oldest first" has one answer.
			store.SetClock(s, func() time.Time { return real.Add(-age + time.Duration(i)*time.Microsecond) })
			out = append(out, try(s.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: frozen(plan), ConsentID: "grt_1", Subject: "alice"})).must(t))
		}
		return out
	}
	return f, dispatch(40*24*time.Hour, old), dispatch(24*time.Hour, young)
}

// testWorkflowPurge: workflows past the retention go with their layers,
// in batches until none is left; younger ones stay whole and readable; a
// second run deletes nothing; a zero or negative retention is refused
// rather than read as "everything".
func testWorkflowPurge(t *testing.T, s store.Store) {
	ctx := context.Background()
	f, old, young := workflowScene(t, s, 5, 2)

	for _, bad := range []store.WorkflowPurgePolicy{{}, {Retention: -time.Hour}, {Retention: time.Hour, BatchSize: -1}} {
		_, err := s.PurgeWorkflows(ctx, bad)
		wantErr(t, err, store.ErrInvalid)
	}
	if n := len(try(s.ListWorkflows(ctx, f.projectA.ID, 100)).must(t)); n != 7 {
		t.Fatalf("a refused policy deleted workflows: %d left", n)
	}

	// Batches of two: five old workflows take three transactions.
	res := try(s.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: retention, BatchSize: 2})).must(t)
	if !res.Ran || res.Deleted["workflows"] != 5 || res.Deleted["workflow_layers"] != 5*4 {
		t.Fatalf("purge = %+v, want 5 workflows and 20 layers", res)
	}
	for _, w := range old {
		_, err := s.GetWorkflow(ctx, f.projectA.ID, w.ID)
		wantErr(t, err, store.ErrNotFound)
	}
	for _, w := range young {
		if got := try(s.GetWorkflow(ctx, f.projectA.ID, w.ID)).must(t); len(got.Layers) != 4 {
			t.Fatalf("a young workflow lost layers: %+v", got)
		}
	}
	if ws := try(s.ListWorkflows(ctx, f.projectA.ID, 100)).must(t); len(ws) != 2 {
		t.Fatalf("%d workflows left, want the 2 young ones", len(ws))
	}
	var layers int
	if err := store.RawDB(s).QueryRowContext(ctx, `SELECT COUNT(*) FROM workflow_layers`).Scan(&layers); err != nil || layers != 2*4 {
		t.Fatalf("%d layer rows left (%v), want 8", layers, err)
	}

	// Idempotent: nothing is left to delete.
	res = try(s.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: retention})).must(t)
	if !res.Ran || res.Deleted["workflows"] != 0 || res.Deleted["workflow_layers"] != 0 {
		t.Fatalf("second purge = %+v", res)
	}
	// Exactly at a batch's size, the run looks once more and stops.
	workflowScene(t, s, 3, 0)
	res = try(s.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: retention, BatchSize: 3})).must(t)
	if res.Deleted["workflows"] != 3 {
		t.Fatalf("purge of one full batch = %+v", res)
	}
}

// testConcurrentWorkflowPurges: purges running at once (replicas on one
// database) delete every expired workflow exactly once between them and
// fail nowhere.
func testConcurrentWorkflowPurges(t *testing.T, s store.Store) {
	ctx := context.Background()
	workflowScene(t, s, 9, 1)
	total, ran := concurrentPurges(t, func() (store.PurgeResult, error) {
		return s.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: retention, BatchSize: 2})
	})
	if total["workflows"] != 9 || total["workflow_layers"] != 9*4 || ran == 0 {
		t.Fatalf("together the purges deleted %v (%d ran), want 9 workflows and 36 layers", total, ran)
	}
}

// testWorkflowPurgeLock (PostgreSQL): a replica holding the workflow
// purge's advisory lock makes another skip without deleting, and one
// holding the OAuth purge's lock does not: each purge has its own key.
func testWorkflowPurgeLock(t *testing.T, s store.Store) {
	if !isPostgres(s) {
		t.Skip("SQLite has one writer; there is no advisory lock to hold")
	}
	ctx := context.Background()
	f, _, _ := workflowScene(t, s, 2, 0)
	hold := func(key int64) *sql.Tx {
		tx, err := store.RawDB(s).BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, key); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	tx := hold(store.WorkflowPurgeLockKey)
	res := try(s.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: retention})).must(t)
	if res.Ran || res.Deleted["workflows"] != 0 {
		t.Fatalf("purge while another replica holds its lock = %+v", res)
	}
	_ = tx.Rollback()
	if n := len(try(s.ListWorkflows(ctx, f.projectA.ID, 100)).must(t)); n != 2 {
		t.Fatalf("%d workflows left by the skipped purge, want 2", n)
	}

	tx = hold(store.OAuthPurgeLockKey)
	defer tx.Rollback()
	res = try(s.PurgeWorkflows(ctx, store.WorkflowPurgePolicy{Retention: retention})).must(t)
	if !res.Ran || res.Deleted["workflows"] != 2 {
		t.Fatalf("purge while the OAuth purge holds its own lock = %+v", res)
	}
}
