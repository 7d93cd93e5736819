package store

import "database/sql"

// RawDB exposes a store's connection pool to the external tests, which scan
// tables directly (for example to prove that no token secret is stored).
func RawDB(s Store) *sql.DB { return s.(*sqlStore).db }
