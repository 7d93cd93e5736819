package store

import (
	"context"
	"database/sql"
	"time"
)

// revocation names where a revoke writes: the row's table, the column that
// holds its tenant (project or account), and, for a repository, the table of
// sources that read it, whose live rows are revoked with it. The names are
// constants of this package, never input.
type revocation struct {
	what         string // "document source": for the error of a failed write
	table        string
	tenantColumn string
	// cascade, if set, is the table whose live rows with repository_id =
	// the revoked row are revoked at the same instant.
	cascade     string
	cascadeWhat string
}

// revokeOnce is every Revoke* of the store: inside one transaction it loads
// the row (load enforces the tenant and returns ErrNotFound), keeps a first
// revocation as it is (a second revoke changes nothing and reports the
// original time), and otherwise marks the row, and its cascade, revoked at
// one instant. It returns the row as it now stands.
func revokeOnce[T any](ctx context.Context, s *sqlStore, r revocation, tenantID, id string, load func(*sql.Tx) (T, error), revokedAt func(*T) **time.Time) (T, error) {
	var row T
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if row, err = load(tx); err != nil {
			return err
		}
		at := revokedAt(&row)
		if *at != nil {
			return nil
		}
		now := s.now()
		if _, err := s.exec(ctx, tx, "revoking "+r.what,
			`UPDATE `+r.table+` SET revoked_at = $1 WHERE `+r.tenantColumn+` = $2 AND id = $3`,
			s.d.timeArg(now), tenantID, id); err != nil {
			return err
		}
		if r.cascade != "" {
			if _, err := s.exec(ctx, tx, "revoking the repository's "+r.cascadeWhat,
				`UPDATE `+r.cascade+` SET revoked_at = $1
				 WHERE `+r.tenantColumn+` = $2 AND repository_id = $3 AND revoked_at IS NULL`,
				s.d.timeArg(now), tenantID, id); err != nil {
				return err
			}
		}
		*at = &now
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return row, nil
}
