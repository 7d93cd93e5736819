package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// dialect is what differs between the two backends. Everything else, every
// query included, is shared: placeholders are $1, $2, … on both (SQLite
// reads "$N" as parameter N).
type dialect interface {
	// name is "sqlite" or "postgres", for messages.
	name() string
	// timeArg encodes a time as a query argument.
	timeArg(t time.Time) any
	// classify maps a constraint violation to ErrConflict (uniqueness),
	// ErrNotFound (a missing referenced row) or ErrInvalid (a CHECK or NOT
	// NULL), keeping the driver error in the chain; other errors pass through.
	classify(err error) error
	// lockMigrations serialises migrations across processes for the rest of
	// tx.
	lockMigrations(ctx context.Context, tx *sql.Tx) error
	// tryPurgeLock takes, for the rest of tx, the lock that lets one
	// process at a time run one scheduled purge (key), without waiting:
	// false means another process holds it.
	tryPurgeLock(ctx context.Context, tx *sql.Tx, key purgeLock) (bool, error)
	// forShare is the clause that makes a SELECT in a transaction hold its
	// rows against concurrent change until commit.
	forShare() string
	// lockedRowContext is the context for a statement of a transaction
	// that already holds the write lock and cannot wait on anyone: SQLite
	// drops its cancellation, whose watcher goroutine per statement cost
	// more than a small insert; PostgreSQL keeps ctx, since a statement
	// there still crosses the network.
	lockedRowContext(ctx context.Context) context.Context
	// cachesStatements reports whether the driver already prepares each
	// query once per connection and keeps it by its text, so that the
	// store prepares none itself (preparedQueryer).
	cachesStatements() bool
}

// sqlStore implements Store over database/sql for either dialect.
type sqlStore struct {
	db *sql.DB
	// prepared is db for the reads of every call (preparedQueryer).
	prepared *preparedQueryer
	d        dialect
	// now is the clock; times are UTC, truncated to microseconds, which both
	// backends store exactly.
	now func() time.Time
	// migrations is what migrate did at open (Migrations).
	migrations MigrationReport
}

func newSQLStore(db *sql.DB, d dialect) *sqlStore {
	return &sqlStore{db: db, prepared: newPreparedQueryer(db, !d.cachesStatements()), d: d, now: func() time.Time {
		return time.Now().UTC().Truncate(time.Microsecond)
	}}
}

// openSQLStore makes the store over an opened pool: it waits for the first
// connection with ping, then migrates. Either failing closes the pool, so a
// backend that cannot serve holds no connection.
func openSQLStore(ctx context.Context, db *sql.DB, d dialect, ping func(context.Context, *sqlStore) error) (Store, error) {
	s := newSQLStore(db, d)
	if err := ping(ctx, s); err != nil {
		db.Close()
		return nil, err
	}
	if err := migrate(ctx, s); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Ping implements Store.
func (s *sqlStore) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("%s: ping: %w", s.d.name(), err)
	}
	return nil
}

// ProbeWrite implements Store: one row rewritten, so a database that
// answers but cannot write (a full disk, read-only) fails it.
func (s *sqlStore) ProbeWrite(ctx context.Context) error {
	_, err := s.exec(ctx, s.db, "readiness write probe", `UPDATE readiness_probe SET probed_at = $1 WHERE id = 1`, s.d.timeArg(s.now()))
	return err
}

// PoolStats implements Store.
func (s *sqlStore) PoolStats() sql.DBStats { return s.db.Stats() }

// Close implements Store: the prepared statements, then the pool.
func (s *sqlStore) Close() error { return errors.Join(s.prepared.close(), s.db.Close()) }

// queryer is what *sql.DB and *sql.Tx have in common.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inTx runs fn in a transaction: committed when fn returns nil, rolled
// back otherwise. On SQLite every transaction begins
// IMMEDIATE (see sqliteDSN), so read-then-write bodies never deadlock on a
// lock upgrade.
func (s *sqlStore) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", s.d.name(), err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.d.classify(fmt.Errorf("%s: commit: %w", s.d.name(), err))
	}
	return nil
}

// exec runs a write and classifies constraint violations.
func (s *sqlStore) exec(ctx context.Context, q queryer, what, query string, args ...any) (sql.Result, error) {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return nil, s.d.classify(fmt.Errorf("%s: %w", what, err))
	}
	return res, nil
}

// notFound turns sql.ErrNoRows into ErrNotFound naming what was looked for.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// dbTime scans a time stored by either backend: time.Time from PostgreSQL's
// timestamptz, the fixed-width UTC text of sqliteTimeLayout from SQLite.
type dbTime struct {
	t     time.Time
	valid bool
}

// Scan implements sql.Scanner.
func (d *dbTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d = dbTime{}
		return nil
	case time.Time:
		*d = dbTime{t: v.UTC(), valid: true}
		return nil
	case string:
		return d.parse(v)
	case []byte:
		return d.parse(string(v))
	default:
		return fmt.Errorf("store: cannot scan %T as a time", v)
	}
}

func (d *dbTime) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("store: stored time %q: %w", s, err)
	}
	*d = dbTime{t: t.UTC(), valid: true}
	return nil
}

// ptr returns the time or nil when NULL.
func (d dbTime) ptr() *time.Time {
	if !d.valid {
		return nil
	}
	t := d.t
	return &t
}

// rowScanner is what *sql.Row and *sql.Rows have in common.
type rowScanner interface {
	Scan(dest ...any) error
}

var _ Store = (*sqlStore)(nil)
