package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"
)

// WorkflowPurgeStore removes dispatched workflows past their retention
// (catalog.workflow_retention), so that what dispatching adds to the store
// stays bounded: without it, one consent dispatching at its write budget adds
// over 150 MB a day, forever.
type WorkflowPurgeStore interface {
	// PurgeWorkflows deletes every workflow created longer ago than
	// p.Retention, with its layers, oldest first, p.BatchSize workflows per
	// transaction, so that no transaction holds SQLite's single write lock
	// (or PostgreSQL's row locks) for long. Each batch deletes by the
	// workflows' own creation time, so running it twice, or on two
	// replicas one after the other, deletes nothing twice. On PostgreSQL
	// each batch takes a transaction-scoped advisory lock of its own (not
	// the OAuth purge's): a replica that finds it taken stops at once, and
	// Ran is false if it had not run a batch yet. Counts are by table,
	// "workflows" and "workflow_layers"; on an error they are what the
	// committed batches deleted.
	PurgeWorkflows(ctx context.Context, p WorkflowPurgePolicy) (PurgeResult, error)
}

// WorkflowPurgePolicy says which workflows have expired.
type WorkflowPurgePolicy struct {
	// Retention: a workflow created longer ago than this is deleted. It
	// must be positive; a zero policy deletes nothing rather than all.
	Retention time.Duration
	// BatchSize is the number of workflows deleted per transaction;
	// zero means DefaultWorkflowPurgeBatch.
	BatchSize int
}

// DefaultWorkflowPurgeBatch is the batch size of PurgeWorkflows: at about
// seven layers a workflow, a few thousand rows per transaction, short
// enough not to stall a dispatch waiting for the write lock.
const DefaultWorkflowPurgeBatch = 500

// maxWorkflowPurgeBatch keeps a batch's IN list well under both backends'
// limit on bound parameters.
const maxWorkflowPurgeBatch = 5000

// PurgeWorkflows implements WorkflowPurgeStore.
func (s *sqlStore) PurgeWorkflows(ctx context.Context, p WorkflowPurgePolicy) (PurgeResult, error) {
	res := PurgeResult{Deleted: map[string]int64{"workflows": 0, "workflow_layers": 0}}
	if p.Retention <= 0 {
		return res, invalid("retention", "%s: want a positive duration", p.Retention)
	}
	batch := p.BatchSize
	if batch == 0 {
		batch = DefaultWorkflowPurgeBatch
	}
	if batch < 0 || batch > maxWorkflowPurgeBatch {
		return res, invalid("batch_size", "%d: want 1 to %d", batch, maxWorkflowPurgeBatch)
	}
	// One cutoff for the whole run: what becomes old while it runs is the
	// next run's.
	cutoff := s.d.timeArg(s.now().Add(-p.Retention))
	for {
		locked, n, err := s.purgeWorkflowBatch(ctx, cutoff, batch, res.Deleted)
		if err != nil {
			return res, err
		}
		if !locked {
			return res, nil
		}
		res.Ran = true
		if n < batch {
			return res, nil
		}
	}
}

// purgeWorkflowBatch deletes, in one transaction, the oldest workflows
// created before cutoff, at most batch of them, and their layers first
// (workflow_layers refers to workflows). It adds what it deleted to
// deleted and reports whether it held the purge lock and how many
// workflows it deleted.
func (s *sqlStore) purgeWorkflowBatch(ctx context.Context, cutoff any, batch int, deleted map[string]int64) (bool, int, error) {
	var workflows int64
	locked, err := s.purgeTx(ctx, workflowPurgeLock, deleted, func(tx *sql.Tx, del purgeDelete) error {
		ids, err := queryAll(ctx, tx, "listing expired workflows", func(r rowScanner) (any, error) {
			var id string
			err := r.Scan(&id)
			return id, err
		}, `SELECT id FROM workflows WHERE created_at < $1 ORDER BY created_at, id LIMIT $2`, cutoff, batch)
		if err != nil || len(ids) == 0 {
			return err
		}
		// The IDs chosen above, by parameter: both deletes act on the same
		// workflows even if a row with an old time is written meanwhile.
		in := placeholders(2, len(ids))
		args := append([]any{cutoff}, ids...)
		if _, err := del("workflow_layers", "purging workflow layers",
			`DELETE FROM workflow_layers WHERE workflow_id IN (SELECT id FROM workflows WHERE created_at < $1 AND id IN (`+in+`))`, args...); err != nil {
			return err
		}
		workflows, err = del("workflows", "purging workflows",
			`DELETE FROM workflows WHERE created_at < $1 AND id IN (`+in+`)`, args...)
		return err
	})
	if err != nil {
		return locked, 0, err
	}
	return locked, int(workflows), nil
}

// placeholders returns n bind parameters "$from, $from+1, …".
func placeholders(from, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = "$" + strconv.Itoa(from+i)
	}
	return strings.Join(ps, ", ")
}
