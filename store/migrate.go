package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// migrationFiles holds the schema, one numbered file per step
// (NNNN_name.sql), shared by both backends.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step.
type migration struct {
	version  int64
	name     string
	sql      string
	checksum string
}

// loadMigrations reads the embedded migrations in version order. Versions
// are the file names' leading digits and must be unique.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var out []migration
	for _, name := range names {
		base := path.Base(name)
		digits, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(digits, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: %s: want NNNN_name.sql", base)
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		sum := sha256.Sum256(body)
		out = append(out, migration{version: v, name: base, sql: string(body), checksum: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(out, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations: %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// createMigrationsTable is the bookkeeping table; it is not itself a
// migration, so that the first migration can be recorded like any other.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL
)`

// migrate applies every pending migration in one transaction, under the
// dialect's migration lock, so that it is all-or-nothing and two processes
// starting at once apply each step exactly once. It refuses a database that
// has a migration this binary does not know (a newer binary migrated it) or
// whose recorded checksum differs from the embedded file (an applied
// migration was edited): running on a schema it was not built for could
// break the invariants the schema enforces.
func migrate(ctx context.Context, s *sqlStore) error {
	migrations, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.d.lockMigrations(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
			return fmt.Errorf("%s: creating schema_migrations: %w", s.d.name(), err)
		}
		applied, err := appliedMigrations(ctx, tx)
		if err != nil {
			return fmt.Errorf("%s: reading schema_migrations: %w", s.d.name(), err)
		}
		known := make(map[int64]migration, len(migrations))
		for _, m := range migrations {
			known[m.version] = m
		}
		for v, sum := range applied {
			m, ok := known[v]
			if !ok {
				return fmt.Errorf("%s: database has migration %d, unknown to this binary: is a newer version running?", s.d.name(), v)
			}
			if m.checksum != sum {
				return fmt.Errorf("%s: migration %s was changed after it was applied (checksum mismatch)", s.d.name(), m.name)
			}
		}
		report := MigrationReport{Backend: s.d.name(), Known: len(migrations)}
		for _, m := range migrations {
			if _, done := applied[m.version]; done {
				continue
			}
			report.Applied = append(report.Applied, m.name)
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: migration %s: %w", s.d.name(), m.name, err)
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)`,
				m.version, m.name, m.checksum, s.d.timeArg(s.now())); err != nil {
				return fmt.Errorf("%s: recording migration %s: %w", s.d.name(), m.name, err)
			}
		}
		s.migrations = report
		return nil
	})
}

// MigrationReport is what opening a store did to its schema: the backend,
// the migrations this binary embeds, and those it applied now, in order
// (none: the schema was up to date). The gateway logs it at start.
type MigrationReport struct {
	Backend string
	Known   int
	Applied []string
}

// Migrations returns what the store's open did to its schema, for a store
// Open returned (ok false for any other Store).
func Migrations(st Store) (MigrationReport, bool) {
	s, ok := st.(*sqlStore)
	if !ok {
		return MigrationReport{}, false
	}
	return s.migrations, true
}

// appliedMigrations returns version → checksum of the applied migrations.
func appliedMigrations(ctx context.Context, tx *sql.Tx) (map[int64]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version, checksum FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[int64]string{}
	for rows.Next() {
		var v int64
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			return nil, err
		}
		applied[v] = sum
	}
	return applied, rows.Err()
}
