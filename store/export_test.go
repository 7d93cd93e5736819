package store

import (
	"database/sql"
	"testing"
	"time"
)

// RawDB exposes a store's connection pool to the external tests, which scan
// tables directly (for example to prove that no token secret is stored).
func RawDB(s Store) *sql.DB { return s.(*sqlStore).db }

// SetClock replaces a store's clock, so that tests can make rows expire.
func SetClock(s Store, now func() time.Time) { s.(*sqlStore).now = now }

// The purges' advisory lock keys, so that a test can hold one as another
// replica would.
const (
	OAuthPurgeLockKey    = int64(oauthPurgeLock)
	WorkflowPurgeLockKey = int64(workflowPurgeLock)
)

// Unprepared returns s as a store sharing its pool that runs every query
// as text, as the store did before it prepared the reads of every call.
// Do not close it.
func Unprepared(s Store) Store {
	c := *s.(*sqlStore)
	c.prepared = newPreparedQueryer(c.db, false)
	return &c
}

// Reprepared returns s as a store sharing its pool that prepares the
// reads of every call, on either backend, with none prepared yet; its
// statements close when the test ends. Closing it closes s's pool.
func Reprepared(t testing.TB, s Store) Store {
	c := *s.(*sqlStore)
	c.prepared = newPreparedQueryer(c.db, true)
	t.Cleanup(func() { c.prepared.close() })
	return &c
}

// PreparedStatements is how many statements s holds prepared.
func PreparedStatements(s Store) int {
	p := s.(*sqlStore).prepared
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.stmts)
}
