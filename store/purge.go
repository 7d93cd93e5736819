package store

import (
	"context"
	"database/sql"
	"fmt"
)

// PurgeResult is what one purge did.
type PurgeResult struct {
	// Ran is false when another replica held the purge lock.
	Ran bool
	// Deleted counts deleted rows by table; each purge names its tables
	// (PurgeOAuth: codes, login_sessions, tokens, clients, grants, the
	// consents under the table's historical name).
	Deleted map[string]int64
}

// purgeLock is the PostgreSQL advisory lock key of one scheduled purge:
// the first 8 bytes of SHA-256 of its name, read as a big-endian int64.
// Each purge has its own, so replicas take turns at each without one purge
// making another skip.
type purgeLock int64

// The purges' lock keys.
const (
	// oauthPurgeLock is SHA-256("agent-gateway/store/purge").
	oauthPurgeLock purgeLock = -6993785210412293760
	// workflowPurgeLock is SHA-256("agent-gateway/store/workflow-purge").
	workflowPurgeLock purgeLock = -2224246668590111935
	// auditPurgeLock is SHA-256("agent-gateway/store/audit-purge").
	auditPurgeLock purgeLock = 5399747621813938940
)

// purgeTx runs one transaction of a purge: it takes the purge's advisory
// lock for the transaction and, holding it, runs fn, whose deletes del
// counts by table. The counts are added to deleted only once the
// transaction has committed, so a result never counts rows that were
// rolled back, and a purge in batches reports those of the batches it
// committed. locked is false, and fn does not run, when another replica
// holds the lock. What each purge deletes per transaction, and when it
// stops, is its own (PurgeOAuth, PurgeWorkflows, PurgeAuditRecords).
func (s *sqlStore) purgeTx(ctx context.Context, lock purgeLock, deleted map[string]int64, fn func(tx *sql.Tx, del purgeDelete) error) (locked bool, err error) {
	counts := map[string]int64{}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		ok, err := s.d.tryPurgeLock(ctx, tx, lock)
		if err != nil || !ok {
			return err
		}
		locked = true
		return fn(tx, func(table, what, query string, args ...any) (int64, error) {
			r, err := s.exec(ctx, tx, what, query, args...)
			if err != nil {
				return 0, err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return 0, fmt.Errorf("%s: %w", what, err)
			}
			counts[table] += n
			return n, nil
		})
	})
	if err != nil {
		return locked, err
	}
	for table, n := range counts {
		deleted[table] += n
	}
	return locked, nil
}

// purgeDelete runs one DELETE of a purge transaction (what names it in
// errors) and counts the rows it deleted under table.
type purgeDelete func(table, what, query string, args ...any) (int64, error)
