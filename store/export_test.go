package store

import (
	"database/sql"
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
