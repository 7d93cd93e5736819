package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// CreateGrant implements GrantStore.
func (s *sqlStore) CreateGrant(ctx context.Context, projectID, subject, clientID string, scopes []string) (Grant, error) {
	if err := validateText("subject", subject, maxSubjectBytes); err != nil {
		return Grant{}, err
	}
	if err := validateText("client_id", clientID, maxURIBytes); err != nil {
		return Grant{}, err
	}
	scopes, err := normalizeScopes(scopes)
	if err != nil {
		return Grant{}, err
	}
	g := Grant{
		ID: newID("grt"), ProjectID: projectID, Subject: subject, ClientID: clientID,
		Scopes: scopes, CreatedAt: s.now(),
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, "project", `SELECT 1 FROM projects WHERE id = $1`, projectID); err != nil {
			return err
		}
		// The member row stays locked until commit, so a concurrent
		// RemoveMember waits and then revokes this grant too.
		if err := exists(ctx, tx, "member",
			`SELECT 1 FROM project_members WHERE project_id = $1 AND subject = $2`+s.d.forShare(),
			projectID, subject); errors.Is(err, ErrNotFound) {
			return invalid("subject", "not a member of project %s", projectID)
		} else if err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "creating grant",
			`INSERT INTO oauth_grants (id, project_id, subject, client_id, scopes, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6)`,
			g.ID, g.ProjectID, g.Subject, g.ClientID, strings.Join(g.Scopes, " "), s.d.timeArg(g.CreatedAt))
		return err
	})
	if err != nil {
		return Grant{}, err
	}
	return g, nil
}

const grantColumns = `g.id, g.project_id, g.subject, g.client_id, g.scopes, g.created_at, g.revoked_at`

func scanGrant(row rowScanner) (Grant, error) {
	var g Grant
	var scopes string
	var created, revoked dbTime
	if err := row.Scan(&g.ID, &g.ProjectID, &g.Subject, &g.ClientID, &scopes, &created, &revoked); err != nil {
		return Grant{}, err
	}
	g.Scopes = strings.Fields(scopes)
	g.CreatedAt, g.RevokedAt = created.t, revoked.ptr()
	return g, nil
}

// GetGrant implements GrantStore.
func (s *sqlStore) GetGrant(ctx context.Context, grantID string) (Grant, error) {
	return s.getGrant(ctx, s.db, grantID)
}

func (s *sqlStore) getGrant(ctx context.Context, q queryer, grantID string) (Grant, error) {
	g, err := scanGrant(q.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM oauth_grants g WHERE g.id = $1`, grantID))
	if err != nil {
		return Grant{}, notFound(err, "grant")
	}
	return g, nil
}

// ListGrants implements GrantStore.
func (s *sqlStore) ListGrants(ctx context.Context, projectID string, includeRevoked bool) ([]Grant, error) {
	return queryAll(ctx, s.db, "listing grants", scanGrant,
		`SELECT `+grantColumns+` FROM oauth_grants g
		 WHERE g.project_id = $1 AND ($2 OR g.revoked_at IS NULL)
		 ORDER BY g.created_at, g.id`,
		projectID, includeRevoked)
}

// RevokeGrant implements GrantStore.
func (s *sqlStore) RevokeGrant(ctx context.Context, grantID string) (Grant, error) {
	var g Grant
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if g, err = s.getGrant(ctx, tx, grantID); err != nil {
			return err
		}
		if g.RevokedAt != nil {
			return nil
		}
		now := s.now()
		g.RevokedAt = &now
		if _, err := s.exec(ctx, tx, "revoking grant",
			`UPDATE oauth_grants SET revoked_at = $1 WHERE id = $2`, s.d.timeArg(now), grantID); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, "revoking the grant's tokens",
			`UPDATE oauth_tokens SET revoked_at = $1 WHERE grant_id = $2 AND revoked_at IS NULL`,
			s.d.timeArg(now), grantID)
		return err
	})
	if err != nil {
		return Grant{}, err
	}
	return g, nil
}

// activeGrant returns an unrevoked grant or ErrNotFound.
func (s *sqlStore) activeGrant(ctx context.Context, q queryer, grantID string) (Grant, error) {
	g, err := s.getGrant(ctx, q, grantID)
	if err != nil {
		return Grant{}, err
	}
	if g.RevokedAt != nil {
		return Grant{}, fmt.Errorf("%w: grant (revoked)", ErrNotFound)
	}
	return g, nil
}

// validateTTL checks a token lifetime.
func validateTTL(field string, ttl time.Duration) error {
	if ttl <= 0 {
		return invalid(field, "%v: must be positive", ttl)
	}
	return nil
}

// insertToken generates a token of kind under grantID and stores its hash.
func (s *sqlStore) insertToken(ctx context.Context, tx *sql.Tx, grantID string, kind TokenKind, familyID string, ttl time.Duration) (IssuedToken, error) {
	prefix := AccessTokenPrefix
	if kind == TokenRefresh {
		prefix = RefreshTokenPrefix
	}
	secret, err := NewToken(prefix)
	if err != nil {
		return IssuedToken{}, err
	}
	now := s.now()
	t := IssuedToken{Secret: secret, Kind: kind, GrantID: grantID, FamilyID: familyID, ExpiresAt: now.Add(ttl)}
	_, err = s.exec(ctx, tx, "issuing token",
		`INSERT INTO oauth_tokens (token_hash, grant_id, kind, family_id, expires_at, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6)`,
		HashToken(secret), grantID, string(kind), nullString(familyID),
		s.d.timeArg(t.ExpiresAt), s.d.timeArg(now))
	if err != nil {
		return IssuedToken{}, err
	}
	return t, nil
}

// IssueAccessToken implements GrantStore.
func (s *sqlStore) IssueAccessToken(ctx context.Context, grantID string, ttl time.Duration) (IssuedToken, error) {
	if err := validateTTL("ttl", ttl); err != nil {
		return IssuedToken{}, err
	}
	var t IssuedToken
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.activeGrant(ctx, tx, grantID); err != nil {
			return err
		}
		var err error
		t, err = s.insertToken(ctx, tx, grantID, TokenAccess, "", ttl)
		return err
	})
	if err != nil {
		return IssuedToken{}, err
	}
	return t, nil
}
