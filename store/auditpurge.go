package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// AuditPurgeStore removes audit records past their retention
// (audit.retention) without breaking what `admin audit verify` can check:
// it deletes only a prefix of each chain that ends at a signed checkpoint,
// and keeps that checkpoint, the anchor from which verification of the
// records left continues (docs/audit.md#retention-and-purge). The store
// holds no signing key: the anchor is one the writer signed itself.
type AuditPurgeStore interface {
	// PurgeAuditRecords deletes, for every writer, the records of the
	// longest prefix of its chain that is older than p.Before and ends at
	// one of its checkpoints, and the checkpoints before that one. Each
	// transaction ends at a checkpoint (p.BatchSize records or the next
	// checkpoint past them), so every state it leaves, even if it stops
	// half way, verifies; running it twice, or on two replicas one after
	// the other, deletes nothing twice. On PostgreSQL each transaction
	// takes an advisory lock of its own; a replica that finds it taken
	// stops, and Ran is false if it had deleted nothing. Counts are by
	// table, "audit_records" and "audit_checkpoints".
	PurgeAuditRecords(ctx context.Context, p AuditPurgePolicy) (PurgeResult, error)
}

// AuditPurgePolicy says which audit records have expired.
type AuditPurgePolicy struct {
	// Before: a record at or after it is kept, and so is every record
	// after it in its chain. It must be set.
	Before time.Time
	// BatchSize is about the number of records deleted per transaction;
	// zero means DefaultAuditPurgeBatch.
	BatchSize int
}

// DefaultAuditPurgeBatch is the records one purge transaction deletes,
// give or take the records to the next checkpoint.
const DefaultAuditPurgeBatch = 5000

// PurgeAuditRecords implements AuditPurgeStore. Each transaction is one
// purgeTx, as the other purges' are (the lock, counted deletes, counts
// kept only on commit), but its loop is its own: the other purges delete
// rows that stand alone, so any batch of them may go, while an audit
// chain may only lose a prefix that ends at one of its writer's signed
// checkpoints, kept as the anchor `admin audit verify` starts from. So it
// goes writer by writer, each batch ends at a checkpoint rather than at a
// row count, and it stops at the anchor auditPurgeAnchor chose, not when
// a batch comes back short. Ran is true unless the lock was lost before
// anything was deleted, even when no writer had anything to purge.
func (s *sqlStore) PurgeAuditRecords(ctx context.Context, p AuditPurgePolicy) (PurgeResult, error) {
	res := PurgeResult{Deleted: map[string]int64{"audit_records": 0, "audit_checkpoints": 0}}
	if p.Before.IsZero() {
		return res, invalid("before", "want a time")
	}
	batch := p.BatchSize
	if batch == 0 {
		batch = DefaultAuditPurgeBatch
	}
	if batch < 0 {
		return res, invalid("batch_size", "%d: want a positive number", batch)
	}
	writers, err := s.ListAuditWriters(ctx)
	if err != nil {
		return res, err
	}
	res.Ran = true
	for _, w := range writers {
		anchor, err := s.auditPurgeAnchor(ctx, w, p.Before)
		if err != nil {
			return res, err
		}
		for anchor > 0 {
			locked, done, err := s.purgeAuditBatch(ctx, w, anchor, batch, res.Deleted)
			if err != nil {
				return res, err
			}
			if !locked {
				res.Ran = res.Deleted["audit_records"]+res.Deleted["audit_checkpoints"] > 0
				return res, nil
			}
			if done {
				break
			}
		}
	}
	return res, nil
}

// auditPurgeAnchor is the checkpoint up to which writer's chain may be
// purged: the last one whose records are all older than before (the
// first record at or after before, and everything after it, stays); 0
// for none, or when nothing before it is left to delete.
func (s *sqlStore) auditPurgeAnchor(ctx context.Context, writer string, before time.Time) (int64, error) {
	var keep sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT MIN(seq) FROM audit_records WHERE writer = $1 AND at >= $2`,
		writer, s.d.timeArg(before.UTC())).Scan(&keep); err != nil {
		return 0, fmt.Errorf("finding the audit records to keep: %w", err)
	}
	var anchor sql.NullInt64
	q := `SELECT MAX(seq) FROM audit_checkpoints WHERE writer = $1`
	args := []any{writer}
	if keep.Valid {
		q += ` AND seq < $2`
		args = append(args, keep.Int64)
	}
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&anchor); err != nil {
		return 0, fmt.Errorf("finding the audit purge's anchor: %w", err)
	}
	if !anchor.Valid {
		return 0, nil
	}
	// Nothing left before the anchor (an earlier purge got there): no
	// transaction to run.
	var left int64
	if err := s.db.QueryRowContext(ctx, `SELECT
	    (SELECT COUNT(*) FROM audit_records WHERE writer = $1 AND seq <= $2) +
	    (SELECT COUNT(*) FROM audit_checkpoints WHERE writer = $1 AND seq < $2)`, writer, anchor.Int64).Scan(&left); err != nil {
		return 0, fmt.Errorf("counting the audit rows to purge: %w", err)
	}
	if left == 0 {
		return 0, nil
	}
	return anchor.Int64, nil
}

// purgeAuditBatch deletes, in one transaction, writer's records up to a
// checkpoint at most anchor: the last one within batch records of the
// chain's first record left, or, when none is, the first one past them.
// It deletes the checkpoints before that one, keeping it as the chain's
// new anchor, and reports whether it held the lock and whether it reached
// anchor.
func (s *sqlStore) purgeAuditBatch(ctx context.Context, writer string, anchor int64, batch int, deleted map[string]int64) (locked, done bool, err error) {
	locked, err = s.purgeTx(ctx, auditPurgeLock, deleted, func(tx *sql.Tx, del purgeDelete) error {
		var first sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MIN(seq) FROM audit_records WHERE writer = $1`, writer).Scan(&first); err != nil {
			return fmt.Errorf("finding the first audit record: %w", err)
		}
		upTo := anchor
		if first.Valid && first.Int64+int64(batch) <= anchor {
			var step sql.NullInt64
			if err := tx.QueryRowContext(ctx, `SELECT MAX(seq) FROM audit_checkpoints WHERE writer = $1 AND seq < $2`,
				writer, first.Int64+int64(batch)).Scan(&step); err != nil {
				return fmt.Errorf("finding the audit purge's step: %w", err)
			}
			if !step.Valid || step.Int64 < first.Int64 {
				if err := tx.QueryRowContext(ctx, `SELECT MIN(seq) FROM audit_checkpoints WHERE writer = $1 AND seq >= $2`,
					writer, first.Int64+int64(batch)).Scan(&step); err != nil {
					return fmt.Errorf("finding the audit purge's step: %w", err)
				}
			}
			if step.Valid && step.Int64 < anchor {
				upTo = step.Int64
			}
		}
		done = upTo == anchor
		if _, err := del("audit_records", "purging audit records", `DELETE FROM audit_records WHERE writer = $1 AND seq <= $2`, writer, upTo); err != nil {
			return err
		}
		_, err := del("audit_checkpoints", "purging audit checkpoints", `DELETE FROM audit_checkpoints WHERE writer = $1 AND seq < $2`, writer, upTo)
		return err
	})
	if err != nil {
		return locked, false, err
	}
	return locked, done, nil
}
