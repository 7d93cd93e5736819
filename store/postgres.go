package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL goes through database/sql with pgx's stdlib driver rather than
// pgxpool: the store's queries are small single-row OLTP statements that gain
// nothing from pgx's native interface (binary COPY, batches, LISTEN), and
// database/sql lets both backends share one SQL layer, so the suite that runs
// on SQLite tests the very code PostgreSQL runs. pgx still does the wire
// protocol, TLS, statement caching and error reporting (*pgconn.PgError).

// migrationLockKey is the pg_advisory_xact_lock key that serialises
// migrations between replicas: the first 8 bytes of
// SHA-256("agent-gateway/store/migrations") read as a big-endian int64.
const migrationLockKey int64 = -5045159580575208670

// Pool bounds for PostgreSQL: enough for one replica's concurrent requests,
// small enough that N replicas stay under max_connections.
const (
	postgresMaxConns    = 16
	postgresMaxIdleTime = 5 * time.Minute
)

// openPostgres connects to the PostgreSQL database at url and migrates it.
func openPostgres(ctx context.Context, url string) (Store, error) {
	cfg, err := pgconnConfig(url)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(postgresMaxConns)
	db.SetMaxIdleConns(postgresMaxConns)
	db.SetConnMaxIdleTime(postgresMaxIdleTime)
	return openSQLStore(ctx, db, postgresDialect{}, func(ctx context.Context, s *sqlStore) error { return s.Ping(ctx) })
}

// pgconnConfig parses the URL. Its error is static: pgx's parse errors can
// quote the URL (url.Parse does), and the URL may hold a password.
func pgconnConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: database URL: not a valid PostgreSQL connection URL", ErrInvalid)
	}
	return cfg, nil
}

// postgresDialect is the PostgreSQL side of dialect.
type postgresDialect struct{}

func (postgresDialect) name() string { return "postgres" }

func (postgresDialect) timeArg(t time.Time) any { return t.UTC() }

func (postgresDialect) classify(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "23505": // unique_violation
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case "23503": // foreign_key_violation
		return fmt.Errorf("%w: referenced row: %w", ErrNotFound, err)
	case "23514", "23502": // check_violation, not_null_violation
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// refusedInput reports whether PostgreSQL refused a value it was sent: a
// data exception (SQLSTATE class 22), such as bytes that are not UTF-8 or
// a NUL in a text parameter (22021), which a caller can put in any
// identifier it sends. The statement failed on its input, not the store.
func refusedInput(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22")
}

// forShare row-locks what a transaction read: under READ COMMITTED a
// concurrent delete or revocation of those rows waits for the commit, and
// then sees what the transaction wrote.
func (postgresDialect) forShare() string { return " FOR SHARE" }

func (postgresDialect) lockedRowContext(ctx context.Context) context.Context { return ctx }

// cachesStatements is true: pgx prepares each query on first use per
// connection and caches it by its text, and does so in the mode the
// database URL chooses (default_query_exec_mode, which an operator sets
// to run behind a PgBouncer in transaction mode). A statement the store
// prepared itself would be a named server-side statement whatever that
// mode, and measured no faster.
func (postgresDialect) cachesStatements() bool { return true }

// tryPurgeLock lets one replica run a purge per tick; the others skip
// rather than wait (each purge is idempotent, so a skipped tick loses
// nothing).
func (postgresDialect) tryPurgeLock(ctx context.Context, tx *sql.Tx, key purgeLock) (bool, error) {
	var ok bool
	if err := tx.QueryRowContext(ctx, "SELECT pg_try_advisory_xact_lock($1)", int64(key)).Scan(&ok); err != nil {
		return false, fmt.Errorf("postgres: purge lock: %w", err)
	}
	return ok, nil
}

// lockMigrations takes a transaction-scoped advisory lock, so two replicas
// starting at once migrate one after the other and the second finds nothing
// left to do. The lock is released when tx ends.
func (postgresDialect) lockMigrations(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	return nil
}
