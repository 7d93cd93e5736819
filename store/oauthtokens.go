package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// storedToken is a token row joined with its grant.
type storedToken struct {
	kind      TokenKind
	familyID  string
	expiresAt time.Time
	revoked   bool
	used      bool
	grant     Grant
}

// getToken reads the token whose secret hashes to hash, with its grant.
func (s *sqlStore) getToken(ctx context.Context, q queryer, hash string) (storedToken, error) {
	var t storedToken
	var kind string
	var family sql.NullString
	var expires, revoked, used dbTime
	var g Grant
	var scopes string
	var gCreated, gRevoked dbTime
	err := q.QueryRowContext(ctx,
		`SELECT t.kind, t.family_id, t.expires_at, t.revoked_at, t.used_at, `+grantColumns+`
		   FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
		  WHERE t.token_hash = $1`, hash).
		Scan(&kind, &family, &expires, &revoked, &used,
			&g.ID, &g.ProjectID, &g.Subject, &g.ClientID, &scopes, &gCreated, &gRevoked)
	if err != nil {
		return storedToken{}, notFound(err, "token")
	}
	g.Scopes = strings.Fields(scopes)
	g.CreatedAt, g.RevokedAt = gCreated.t, gRevoked.ptr()
	t.kind, t.familyID, t.expiresAt = TokenKind(kind), family.String, expires.t
	t.revoked, t.used, t.grant = revoked.valid, used.valid, g
	return t, nil
}

// usable returns ErrNotFound unless the token is of kind, unrevoked,
// unexpired and its grant unrevoked.
func (s *sqlStore) usable(t storedToken, kind TokenKind) error {
	switch {
	case t.kind != kind:
		return fmt.Errorf("%w: %s token", ErrNotFound, kind)
	case t.revoked:
		return fmt.Errorf("%w: %s token (revoked)", ErrNotFound, kind)
	case !s.now().Before(t.expiresAt):
		return fmt.Errorf("%w: %s token (expired)", ErrNotFound, kind)
	case t.grant.RevokedAt != nil:
		return fmt.Errorf("%w: %s token (grant revoked)", ErrNotFound, kind)
	}
	return nil
}

// LookupAccessToken implements GrantStore.
func (s *sqlStore) LookupAccessToken(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, AccessTokenPrefix) {
		return Principal{}, fmt.Errorf("%w: access token", ErrNotFound)
	}
	t, err := s.getToken(ctx, s.db, HashToken(secret))
	if err != nil {
		return Principal{}, err
	}
	if err := s.usable(t, TokenAccess); err != nil {
		return Principal{}, err
	}
	g := t.grant
	return Principal{
		GrantID: g.ID, ProjectID: g.ProjectID, Subject: g.Subject, ClientID: g.ClientID,
		Scopes: g.Scopes, ExpiresAt: t.expiresAt,
	}, nil
}

// RotateRefreshToken implements GrantStore. The whole check-mark-issue step
// is one transaction, and the mark is a conditional UPDATE, so of two
// concurrent rotations of the same token exactly one succeeds; the other is
// treated as reuse.
func (s *sqlStore) RotateRefreshToken(ctx context.Context, clientID, refreshSecret string, accessTTL, refreshTTL time.Duration) (TokenPair, error) {
	if err := validateTTL("access_ttl", accessTTL); err != nil {
		return TokenPair{}, err
	}
	if err := validateTTL("refresh_ttl", refreshTTL); err != nil {
		return TokenPair{}, err
	}
	if !strings.HasPrefix(refreshSecret, RefreshTokenPrefix) {
		return TokenPair{}, fmt.Errorf("%w: refresh token", ErrNotFound)
	}
	hash := HashToken(refreshSecret)
	var pair TokenPair
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		t, err := s.getToken(ctx, tx, hash)
		if err != nil {
			return err
		}
		if t.kind != TokenRefresh || t.grant.ClientID != clientID {
			return fmt.Errorf("%w: refresh token", ErrNotFound)
		}
		if t.used {
			return s.revokeFamilyOnReuse(ctx, tx, t.familyID)
		}
		if err := s.usable(t, TokenRefresh); err != nil {
			return err
		}
		res, err := s.exec(ctx, tx, "marking refresh token used",
			`UPDATE oauth_tokens SET used_at = $1
			  WHERE token_hash = $2 AND used_at IS NULL AND revoked_at IS NULL`,
			s.d.timeArg(s.now()), hash)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("marking refresh token used: %w", err)
		} else if n != 1 {
			// A concurrent rotation won the race after our read.
			return s.revokeFamilyOnReuse(ctx, tx, t.familyID)
		}
		pair, err = s.insertPair(ctx, tx, t.grant, t.familyID, accessTTL, refreshTTL)
		return err
	})
	if err != nil {
		return TokenPair{}, err
	}
	return pair, nil
}

// revokeFamilyOnReuse revokes every token of a refresh family and returns
// ErrTokenReused wrapped so that inTx commits the revocation.
func (s *sqlStore) revokeFamilyOnReuse(ctx context.Context, tx *sql.Tx, familyID string) error {
	if err := s.revokeFamily(ctx, tx, familyID); err != nil {
		return err
	}
	return errCommitThen{fmt.Errorf("%w: family %s revoked", ErrTokenReused, familyID)}
}

func (s *sqlStore) revokeFamily(ctx context.Context, tx *sql.Tx, familyID string) error {
	_, err := s.exec(ctx, tx, "revoking token family",
		`UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL`,
		s.d.timeArg(s.now()), familyID)
	return err
}

// RevokeToken implements GrantStore.
func (s *sqlStore) RevokeToken(ctx context.Context, clientID, secret string) error {
	hash := HashToken(secret)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		t, err := s.getToken(ctx, tx, hash)
		if err != nil {
			return err
		}
		if t.grant.ClientID != clientID {
			return fmt.Errorf("%w: token", ErrNotFound)
		}
		if t.kind == TokenRefresh {
			return s.revokeFamily(ctx, tx, t.familyID)
		}
		_, err = s.exec(ctx, tx, "revoking token",
			`UPDATE oauth_tokens SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL`,
			s.d.timeArg(s.now()), hash)
		return err
	})
}

// PurgeExpiredTokens implements GrantStore.
func (s *sqlStore) PurgeExpiredTokens(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.exec(ctx, s.db, "purging expired tokens",
		`DELETE FROM oauth_tokens WHERE expires_at < $1`, s.d.timeArg(cutoff))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purging expired tokens: %w", err)
	}
	return n, nil
}
