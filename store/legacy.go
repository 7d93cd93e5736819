package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// IssueLegacyToken implements LegacyTokenStore.
func (s *sqlStore) IssueLegacyToken(ctx context.Context, projectID string, permissions []string) (IssuedLegacyToken, error) {
	perms, err := normalizePermissions(permissions)
	if err != nil {
		return IssuedLegacyToken{}, err
	}
	secret, err := NewToken(LegacyTokenPrefix)
	if err != nil {
		return IssuedLegacyToken{}, err
	}
	t := LegacyToken{ID: newID("ltk"), ProjectID: projectID, Permissions: perms, CreatedAt: s.now()}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, "project", `SELECT 1 FROM projects WHERE id = $1`, projectID); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "issuing legacy token",
			`INSERT INTO legacy_project_tokens (token_hash, id, project_id, permissions, created_at)
			 VALUES ($1, $2, $3, $4, $5)`,
			HashToken(secret), t.ID, t.ProjectID, strings.Join(t.Permissions, " "), s.d.timeArg(t.CreatedAt))
		return err
	})
	if err != nil {
		return IssuedLegacyToken{}, err
	}
	return IssuedLegacyToken{LegacyToken: t, Secret: secret}, nil
}

const legacyColumns = `id, project_id, permissions, created_at, revoked_at`

func scanLegacy(row rowScanner) (LegacyToken, error) {
	var t LegacyToken
	var perms string
	var created, revoked dbTime
	if err := row.Scan(&t.ID, &t.ProjectID, &perms, &created, &revoked); err != nil {
		return LegacyToken{}, err
	}
	t.Permissions = strings.Fields(perms)
	t.CreatedAt, t.RevokedAt = created.t, revoked.ptr()
	return t, nil
}

// LookupLegacyToken implements LegacyTokenStore.
func (s *sqlStore) LookupLegacyToken(ctx context.Context, secret string) (LegacyToken, error) {
	if !strings.HasPrefix(secret, LegacyTokenPrefix) {
		return LegacyToken{}, fmt.Errorf("%w: legacy token", ErrNotFound)
	}
	t, err := scanLegacy(s.prepared.QueryRowContext(ctx,
		`SELECT `+legacyColumns+` FROM legacy_project_tokens WHERE token_hash = $1`, HashToken(secret)))
	if err != nil {
		return LegacyToken{}, notFound(err, "legacy token")
	}
	if t.RevokedAt != nil {
		return LegacyToken{}, fmt.Errorf("%w: legacy token (revoked)", ErrNotFound)
	}
	return t, nil
}

// RevokeLegacyToken implements LegacyTokenStore.
func (s *sqlStore) RevokeLegacyToken(ctx context.Context, projectID, tokenID string) (LegacyToken, error) {
	return revokeOnce(ctx, s, revocation{what: "legacy token", table: "legacy_project_tokens", tenantColumn: "project_id"},
		projectID, tokenID, func(tx *sql.Tx) (LegacyToken, error) {
			t, err := scanLegacy(tx.QueryRowContext(ctx,
				`SELECT `+legacyColumns+` FROM legacy_project_tokens WHERE project_id = $1 AND id = $2`,
				projectID, tokenID))
			if err != nil {
				return LegacyToken{}, notFound(err, "legacy token")
			}
			return t, nil
		}, func(t *LegacyToken) **time.Time { return &t.RevokedAt })
}
