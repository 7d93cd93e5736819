package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

func TestOpenRoutesURLs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, url, dataDir string
		file               string // the SQLite file that must exist afterwards
		err                error
	}{
		{"empty url: SQLite in data dir", "", filepath.Join(dir, "data"), filepath.Join(dir, "data", "agent-gateway.db"), nil},
		{"sqlite:// path", "sqlite://" + filepath.Join(dir, "a", "x.db"), "", filepath.Join(dir, "a", "x.db"), nil},
		{"path with URI characters", "sqlite://" + filepath.Join(dir, "q?#%", "x.db"), "", filepath.Join(dir, "q?#%", "x.db"), nil},
		{"file: URI", "file:" + filepath.Join(dir, "f.db") + "?mode=rwc", "", filepath.Join(dir, "f.db"), nil},
		{"empty url, no data dir", "", "", "", store.ErrInvalid},
		{"sqlite:// without path", "sqlite://", "", "", store.ErrInvalid},
		{"unknown scheme", "mysql://root:hunter2@localhost/db", "", "", store.ErrInvalid},
		{"bad postgres URL", "postgres://user:hunter2@[::1", "", "", store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(ctx, tc.url, tc.dataDir)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error = %v, want %v", err, tc.err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %q repeats the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(tc.file); err != nil {
				t.Errorf("database file: %v", err)
			}
		})
	}
}

// TestSQLiteFilesOwnerOnly: the database and its -wal and -shm files are
// 0600 even in a data directory that already exists as 0755 (SQLite
// creates them 0644), and a database left 0644 by an older version is
// narrowed at open.
func TestSQLiteFilesOwnerOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, name := range []string{"agent-gateway.db", "agent-gateway.db-wal", "agent-gateway.db-shm"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s has mode %v, want 0600", when, name, fi.Mode().Perm())
			}
		}
	}
	open := func() store.Store {
		s, err := store.Open(ctx, "", dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RegisterClient(ctx, "c", []string{"https://app.example/cb"}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	check("created")
	s.Close()
	for _, name := range []string{"agent-gateway.db", "agent-gateway.db-wal", "agent-gateway.db-shm"} {
		if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	s = open()
	defer s.Close()
	check("reopened")
}

func TestSQLiteConnectionSettings(t *testing.T) {
	db := store.RawDB(storetest.SQLite(t))
	for pragma, want := range map[string]string{
		"journal_mode": "wal",
		"foreign_keys": "1",
		"busy_timeout": "10000",
	} {
		var got string
		if err := db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	for _, backend := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", storetest.SQLiteURL}, {"postgres", storetest.PostgresURL}} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			url := backend.url(t)
			for range 3 {
				s, err := store.Open(ctx, url, "")
				if err != nil {
					t.Fatal(err)
				}
				assertMigratedOnce(t, s)
				s.Close()
			}
		})
	}
}

// TestConcurrentMigrations starts several stores on one fresh database at
// once, as replicas do: every Open succeeds and each migration is recorded
// exactly once.
func TestConcurrentMigrations(t *testing.T) {
	for _, backend := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", storetest.SQLiteURL}, {"postgres", storetest.PostgresURL}} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			url := backend.url(t)
			const n = 4
			stores := make([]store.Store, n)
			errs := make([]error, n)
			var start, wg sync.WaitGroup
			start.Add(1)
			for i := range n {
				wg.Go(func() {
					start.Wait()
					stores[i], errs[i] = store.Open(ctx, url, "")
				})
			}
			start.Done()
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("Open %d: %v", i, err)
					continue
				}
				defer stores[i].Close()
			}
			if errs[0] == nil {
				assertMigratedOnce(t, stores[0])
			}
		})
	}
}

func TestMigrationsRefuseForeignSchemas(t *testing.T) {
	for _, tc := range []struct {
		name, sql, want string
	}{
		{"unknown newer migration", `INSERT INTO schema_migrations (version, name, checksum, applied_at)
			SELECT 9999, '9999_future.sql', 'x', applied_at FROM schema_migrations WHERE version = 1`, "unknown to this binary"},
		{"edited migration", `UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1`, "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := storetest.SQLiteURL(t)
			s, err := store.Open(ctx, url, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.RawDB(s).Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if s, err = store.Open(ctx, url, ""); err == nil {
				s.Close()
				t.Fatal("Open succeeded on a foreign schema")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func assertMigratedOnce(t *testing.T, s store.Store) {
	t.Helper()
	rows, err := store.RawDB(s).Query(`SELECT version, count(*) FROM schema_migrations GROUP BY version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int64
	for rows.Next() {
		var v, n int64
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("migration %d recorded %d times", v, n)
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 || versions[0] != 1 {
		t.Errorf("applied migrations = %v, want 1…", versions)
	}
}
