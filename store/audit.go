package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// AuditStore keeps the audit record (docs/audit.md): rows of a hash chain
// per writer and the writers' signed checkpoints. The store does not
// interpret a row: store/audit builds, chains, signs and verifies them;
// the store only appends and reads them back in chain order.
type AuditStore interface {
	// AppendAuditRecords inserts rows in one transaction, all or none. A
	// row whose (writer, seq) exists is ErrConflict.
	AppendAuditRecords(ctx context.Context, rows []AuditRow) error
	// AddAuditCheckpoint stores one signed checkpoint.
	AddAuditCheckpoint(ctx context.Context, cp AuditCheckpoint) error
	// ListAuditWriters returns every writer that has a record or a
	// checkpoint, ordered by name.
	ListAuditWriters(ctx context.Context) ([]string, error)
	// ListAuditRecords returns at most limit rows of writer with seq
	// greater than afterSeq, in seq order.
	ListAuditRecords(ctx context.Context, writer string, afterSeq int64, limit int) ([]AuditRow, error)
	// ListAuditCheckpoints returns the writer's checkpoints in seq order.
	ListAuditCheckpoints(ctx context.Context, writer string) ([]AuditCheckpoint, error)
}

// AuditRow is one stored audit record: Record is the canonical JSON the
// chain hashes (store/audit); Writer, Seq, At and Hash repeat it for
// ordering and lookup.
type AuditRow struct {
	Writer string
	Seq    int64
	At     time.Time
	Record string
	Hash   string
}

// AuditCheckpoint is a writer's signed chain head: Head is the hash of
// record Seq, signed at At with the key KeyID names.
type AuditCheckpoint struct {
	Writer    string
	Seq       int64
	Head      string
	At        time.Time
	KeyID     string
	Signature string
}

// MaxAuditBatch bounds the rows of one AppendAuditRecords and one
// ListAuditRecords.
const MaxAuditBatch = 1000

// auditRowsPerInsert is how many rows one multi-row INSERT of a batch
// carries; a batch's last rows, fewer, go one by one. Each statement
// execution costs database/sql and the driver a fixed share (a
// connection grab, argument conversion, a result) that a row of a few
// hundred bytes does not otherwise need.
const auditRowsPerInsert = 32

// insertAuditRows is the INSERT of n audit rows.
func insertAuditRows(n int) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO audit_records (writer, seq, at, record, hash) VALUES `)
	for i := range n {
		if i > 0 {
			q.WriteByte(',')
		}
		fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d)", 5*i+1, 5*i+2, 5*i+3, 5*i+4, 5*i+5)
	}
	return q.String()
}

var (
	insertAuditRow  = insertAuditRows(1)
	insertAuditMany = insertAuditRows(auditRowsPerInsert)
)

// AppendAuditRecords implements AuditStore.
func (s *sqlStore) AppendAuditRecords(ctx context.Context, rows []AuditRow) error {
	if len(rows) > MaxAuditBatch {
		return invalid("rows", "%d: want at most %d", len(rows), MaxAuditBatch)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		// On SQLite a goroutine per statement watching for cancellation
		// was a third of the batch's allocations (lockedRowContext says
		// why it is not needed).
		rowCtx := s.d.lockedRowContext(ctx)
		args := make([]any, 0, 5*auditRowsPerInsert)
		// Each statement is prepared once per batch: parsing one for
		// every execution was a fifth of the writer's CPU.
		insert := func(query string, per int, rows []AuditRow) error {
			stmt, err := tx.PrepareContext(ctx, query)
			if err != nil {
				return fmt.Errorf("appending audit records: %w", err)
			}
			defer stmt.Close()
			for ; len(rows) > 0; rows = rows[per:] {
				args = args[:0]
				for _, r := range rows[:per] {
					args = append(args, r.Writer, r.Seq, s.d.timeArg(r.At.UTC()), r.Record, r.Hash)
				}
				if _, err := stmt.ExecContext(rowCtx, args...); err != nil {
					return s.d.classify(fmt.Errorf("appending audit records: %w", err))
				}
			}
			return nil
		}
		whole := len(rows) / auditRowsPerInsert * auditRowsPerInsert
		if whole > 0 {
			if err := insert(insertAuditMany, auditRowsPerInsert, rows[:whole]); err != nil {
				return err
			}
		}
		if whole < len(rows) {
			return insert(insertAuditRow, 1, rows[whole:])
		}
		return nil
	})
}

// AddAuditCheckpoint implements AuditStore.
func (s *sqlStore) AddAuditCheckpoint(ctx context.Context, cp AuditCheckpoint) error {
	_, err := s.exec(ctx, s.db, "adding an audit checkpoint",
		`INSERT INTO audit_checkpoints (writer, seq, head, at, key_id, signature) VALUES ($1, $2, $3, $4, $5, $6)`,
		cp.Writer, cp.Seq, cp.Head, s.d.timeArg(cp.At.UTC()), cp.KeyID, cp.Signature)
	return err
}

// ListAuditWriters implements AuditStore.
func (s *sqlStore) ListAuditWriters(ctx context.Context) ([]string, error) {
	return queryAll(ctx, s.db, "listing audit writers", func(r rowScanner) (string, error) {
		var w string
		err := r.Scan(&w)
		return w, err
	}, `SELECT writer FROM audit_records UNION SELECT writer FROM audit_checkpoints ORDER BY 1`)
}

// ListAuditRecords implements AuditStore.
func (s *sqlStore) ListAuditRecords(ctx context.Context, writer string, afterSeq int64, limit int) ([]AuditRow, error) {
	if limit <= 0 || limit > MaxAuditBatch {
		return nil, invalid("limit", "%d: want 1 to %d", limit, MaxAuditBatch)
	}
	return queryAll(ctx, s.db, "listing audit records", func(r rowScanner) (AuditRow, error) {
		var row AuditRow
		var at dbTime
		err := r.Scan(&row.Writer, &row.Seq, &at, &row.Record, &row.Hash)
		row.At = at.t
		return row, err
	}, `SELECT writer, seq, at, record, hash FROM audit_records WHERE writer = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		writer, afterSeq, limit)
}

// ListAuditCheckpoints implements AuditStore.
func (s *sqlStore) ListAuditCheckpoints(ctx context.Context, writer string) ([]AuditCheckpoint, error) {
	return queryAll(ctx, s.db, "listing audit checkpoints", func(r rowScanner) (AuditCheckpoint, error) {
		var cp AuditCheckpoint
		var at dbTime
		err := r.Scan(&cp.Writer, &cp.Seq, &cp.Head, &at, &cp.KeyID, &cp.Signature)
		cp.At = at.t
		return cp, err
	}, `SELECT writer, seq, head, at, key_id, signature FROM audit_checkpoints WHERE writer = $1 ORDER BY seq`, writer)
}
