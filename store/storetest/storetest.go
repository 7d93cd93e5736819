// Package storetest gives tests of any package a fresh, migrated store on
// either backend, cleaned up when the test ends.
//
// SQLite needs nothing. PostgreSQL needs a server: the admin connection is
// $AGENT_GATEWAY_TEST_POSTGRES_URL, or postgres://postgres@127.0.0.1:5432/test
// (trust authentication). Each call creates its own database
// ag_test_<random> and drops it (WITH (FORCE)) at cleanup. When no server
// answers, PostgreSQL tests are skipped, except under CI=true, where that is
// a failure: the PostgreSQL backend must be tested in CI.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agent-gateway/agent-gateway/store"
)

// PostgresURLEnv names the environment variable that overrides the admin
// connection URL of the test PostgreSQL server.
const PostgresURLEnv = "AGENT_GATEWAY_TEST_POSTGRES_URL"

// DefaultPostgresURL is the admin connection used when PostgresURLEnv is
// unset: the local server of the development and CI machines.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// connectTimeout bounds how long an unreachable server can stall a test.
const connectTimeout = 5 * time.Second

// SQLite returns a migrated store in a fresh file under t.TempDir(), closed
// when the test ends.
func SQLite(t testing.TB) store.Store {
	t.Helper()
	return open(t, SQLiteURL(t))
}

// SQLiteURL returns a sqlite:// URL of a fresh file under t.TempDir(), for
// tests that open the store themselves (or pass it to a process).
func SQLiteURL(t testing.TB) string {
	t.Helper()
	return "sqlite://" + filepath.Join(t.TempDir(), "agent-gateway.db")
}

// Postgres returns a migrated store on a fresh PostgreSQL database, closed
// and dropped when the test ends. It skips the test when no server answers,
// unless CI=true.
func Postgres(t testing.TB) store.Store {
	t.Helper()
	return open(t, PostgresURL(t))
}

// PostgresURL creates a fresh, empty PostgreSQL database and returns its
// connection URL; the database is dropped when the test ends. It skips the
// test when no server answers, unless CI=true.
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin, adminURL := openAdmin(t)
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*connectTimeout)
	defer cancel()
	name := "ag_test_" + randomHex(t, 8)
	// The name is generated, so quoting it is only hygiene.
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("storetest: creating database: %v", err)
	}
	cfg, _ := pgx.ParseConfig(adminURL)
	cfg.ConnectTimeout = connectTimeout
	t.Cleanup(func() { dropDatabase(t, cfg, name) })
	return DatabaseURL(t, adminURL, name)
}

// Admin opens the admin connection to the test PostgreSQL server (closed
// when the test ends) and returns it with its URL, for tests that create
// roles and databases as an operator would. It skips the test when no
// server answers, unless CI=true.
func Admin(t testing.TB) (*sql.DB, string) {
	t.Helper()
	admin, adminURL := openAdmin(t)
	t.Cleanup(func() { admin.Close() })
	return admin, adminURL
}

// openAdmin is Admin without the cleanup: the caller closes it.
func openAdmin(t testing.TB) (*sql.DB, string) {
	t.Helper()
	adminURL := os.Getenv(PostgresURLEnv)
	if adminURL == "" {
		adminURL = DefaultPostgresURL
	}
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		t.Fatalf("storetest: %s is not a PostgreSQL URL", PostgresURLEnv)
	}
	cfg.ConnectTimeout = connectTimeout
	admin := stdlib.OpenDB(*cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*connectTimeout)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		unreachable(t, err)
	}
	return admin, adminURL
}

// DatabaseURL is adminURL naming the database name instead.
func DatabaseURL(t testing.TB, adminURL, name string) string {
	t.Helper()
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("storetest: %s must be a postgres:// URL", PostgresURLEnv)
	}
	u.Path = "/" + name
	return u.String()
}

// Each runs fn as two subtests, "sqlite" and "postgres", each with a fresh
// store. The postgres subtest skips as Postgres does.
func Each(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

// open opens url and closes the store at cleanup.
func open(t testing.TB, url string) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, url, "")
	if err != nil {
		t.Fatalf("storetest: opening store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("storetest: closing store: %v", err)
		}
	})
	return s
}

// unreachable skips, or under CI fails, a test whose server did not answer.
func unreachable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("storetest: PostgreSQL unreachable and CI=true, so this is a failure: %v", err)
	}
	t.Skipf("storetest: PostgreSQL unreachable, skipping (set %s, or start a server): %v", PostgresURLEnv, err)
}

// dropDatabase drops a test database, disconnecting any session left on it.
func dropDatabase(t testing.TB, cfg *pgx.ConnConfig, name string) {
	admin := stdlib.OpenDB(*cfg)
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("storetest: dropping database %s: %v", name, err)
	}
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return hex.EncodeToString(b)
}
