package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// storedToken is a token row joined with its consent.
type storedToken struct {
	kind      TokenKind
	familyID  string
	expiresAt time.Time
	revoked   bool
	used      bool
	// scopes are the token's own scopes (a narrowed refresh), nil for the
	// consent's.
	scopes  []string
	consent Consent
}

// effectiveScopes are what the token allows: its own scopes when a refresh
// narrowed them, else its consent's.
func (t storedToken) effectiveScopes() []string {
	if t.scopes != nil {
		return t.scopes
	}
	return t.consent.Scopes
}

// getToken reads the token whose secret hashes to hash, with its consent.
func (s *sqlStore) getToken(ctx context.Context, q queryer, hash string) (storedToken, error) {
	var t storedToken
	var kind string
	var family, own sql.NullString
	var expires, revoked, used dbTime
	var g Consent
	var scopes string
	var gCreated, gRevoked dbTime
	err := q.QueryRowContext(ctx,
		`SELECT t.kind, t.family_id, t.expires_at, t.revoked_at, t.used_at, t.scopes, `+consentColumns+`
		   FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
		  WHERE t.token_hash = $1`, hash).
		Scan(&kind, &family, &expires, &revoked, &used, &own,
			&g.ID, &g.ProjectID, &g.Subject, &g.ClientID, &scopes, &gCreated, &gRevoked)
	if err != nil {
		return storedToken{}, notFound(err, "token")
	}
	g.Scopes = strings.Fields(scopes)
	g.CreatedAt, g.RevokedAt = gCreated.t, gRevoked.ptr()
	t.kind, t.familyID, t.expiresAt = TokenKind(kind), family.String, expires.t
	t.revoked, t.used, t.consent = revoked.valid, used.valid, g
	if own.Valid {
		t.scopes = strings.Fields(own.String)
	}
	return t, nil
}

// usable returns ErrNotFound unless the token is of kind, unrevoked,
// unexpired and its consent unrevoked.
func (s *sqlStore) usable(t storedToken, kind TokenKind) error {
	switch {
	case t.kind != kind:
		return fmt.Errorf("%w: %s token", ErrNotFound, kind)
	case t.revoked:
		return fmt.Errorf("%w: %s token (revoked)", ErrNotFound, kind)
	case !s.now().Before(t.expiresAt):
		return fmt.Errorf("%w: %s token (expired)", ErrNotFound, kind)
	case t.consent.RevokedAt != nil:
		return fmt.Errorf("%w: %s token (consent revoked)", ErrNotFound, kind)
	}
	return nil
}

// LookupAccessToken implements ConsentStore.
func (s *sqlStore) LookupAccessToken(ctx context.Context, secret string) (TokenConsent, error) {
	if !strings.HasPrefix(secret, AccessTokenPrefix) {
		return TokenConsent{}, fmt.Errorf("%w: access token", ErrNotFound)
	}
	t, err := s.getToken(ctx, s.prepared, HashToken(secret))
	if err != nil {
		return TokenConsent{}, err
	}
	if err := s.usable(t, TokenAccess); err != nil {
		return TokenConsent{}, err
	}
	g := t.consent
	return TokenConsent{
		ConsentID: g.ID, ProjectID: g.ProjectID, Subject: g.Subject, ClientID: g.ClientID,
		Scopes: t.effectiveScopes(), ExpiresAt: t.expiresAt,
	}, nil
}

// revokeFamily revokes every token of a family in tx.
func (s *sqlStore) revokeFamily(ctx context.Context, tx *sql.Tx, familyID string) error {
	_, err := s.exec(ctx, tx, "revoking token family",
		`UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL`,
		s.d.timeArg(s.now()), familyID)
	return err
}
