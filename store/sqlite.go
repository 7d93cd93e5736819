package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteBusyTimeout is how long a connection waits for another writer
// (another connection or process on the same file) before SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// sqliteTimeLayout stores times as fixed-width UTC text, so that text order
// is time order and values round-trip exactly.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000Z"

// sqliteMaxConns bounds the pool: each modernc connection carries its own
// page cache, and SQLite has a single writer anyway.
const sqliteMaxConns = 8

// sqliteParams are the connection settings every connection gets: WAL for
// concurrent readers and one writer, foreign keys enforced, a busy timeout,
// NORMAL sync (durable in WAL mode except for the last commits on power
// loss), and IMMEDIATE transactions so a read-then-write transaction takes
// the write lock up front instead of failing on a lock upgrade.
func sqliteParams() url.Values {
	return url.Values{
		"_busy_timeout": {fmt.Sprint(sqliteBusyTimeout.Milliseconds())},
		"_foreign_keys": {"1"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
	}
}

// sqliteDSN builds the driver name for a plain file path (isPath) or a
// caller's SQLite URI ("file:…"), adding sqliteParams. A path becomes a
// file: URI with its special characters escaped, so a '?' or '#' in a
// directory name cannot be read as URI syntax.
func sqliteDSN(target string, isPath bool) (string, error) {
	params := sqliteParams().Encode()
	if !isPath {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		return target + sep + params, nil
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return "", fmt.Errorf("sqlite: path %q: %w", target, err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: params}
	return u.String(), nil
}

// openSQLite opens (creating if needed) the SQLite database at target and
// migrates it. With isPath, target is a file path whose directory is created
// with mode 0700: the database holds token hashes and the allowlist.
func openSQLite(ctx context.Context, target string, isPath bool) (Store, error) {
	if isPath {
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: creating data directory: %w", err)
		}
		if err := ownerOnly(target); err != nil {
			return nil, err
		}
	}
	dsn, err := sqliteDSN(target, isPath)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(sqliteMaxConns)
	db.SetMaxIdleConns(sqliteMaxConns)
	return openSQLStore(ctx, db, sqliteDialect{}, pingSQLite)
}

// ownerOnly makes the database file exist with mode 0600 before SQLite
// opens it, and narrows to 0600 a database, -wal or -shm file already
// there with more: SQLite creates its files 0644, and gives the -wal and
// -shm files the database file's mode, so a data directory that already
// existed (as 0755, say) would otherwise expose the token hashes.
func ownerOnly(target string) error {
	f, err := os.OpenFile(target, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: creating the database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqlite: creating the database file: %w", err)
	}
	for _, p := range []string{target, target + "-wal", target + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("sqlite: making %s readable by its owner only: %w", filepath.Base(p), err)
			}
		}
	}
	return nil
}

// pingSQLite opens the first connection, retrying while the file is busy.
// Switching a new database to WAL takes an exclusive lock without waiting
// through the busy handler, so processes creating the same file at once
// can see SQLITE_BUSY here even with a busy timeout.
func pingSQLite(ctx context.Context, s *sqlStore) error {
	deadline := time.Now().Add(sqliteBusyTimeout)
	for {
		err := s.Ping(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sqliteDialect is the SQLite side of dialect.
type sqliteDialect struct{}

func (sqliteDialect) name() string { return "sqlite" }

func (sqliteDialect) timeArg(t time.Time) any { return t.UTC().Format(sqliteTimeLayout) }

func (sqliteDialect) classify(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return fmt.Errorf("%w: referenced row: %w", ErrNotFound, err)
	case sqlite3.SQLITE_CONSTRAINT_CHECK, sqlite3.SQLITE_CONSTRAINT_NOTNULL:
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// forShare is empty on SQLite: every transaction begins IMMEDIATE and so
// already excludes all other writers.
func (sqliteDialect) forShare() string { return "" }

// lockedRowContext: a transaction here began IMMEDIATE, so it holds the
// database's single write lock and its statements wait on no one; the
// transaction's own context still bounds BEGIN and COMMIT.
func (sqliteDialect) lockedRowContext(ctx context.Context) context.Context {
	return context.WithoutCancel(ctx)
}

// cachesStatements is false: modernc compiles the text of an unprepared
// query on every call, and keeps the compiled statement only in a
// prepared one.
func (sqliteDialect) cachesStatements() bool { return false }

// lockMigrations needs nothing on SQLite: the migration transaction began
// IMMEDIATE, which already holds the database's single write lock, and a
// second process waits for it through the busy timeout.
func (sqliteDialect) lockMigrations(context.Context, *sql.Tx) error { return nil }

// tryPurgeLock needs nothing on SQLite either: the purge's IMMEDIATE
// transaction holds the single write lock, so purges never overlap.
func (sqliteDialect) tryPurgeLock(context.Context, *sql.Tx, purgeLock) (bool, error) {
	return true, nil
}
