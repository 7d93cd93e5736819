package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Consents are stored in the table oauth_grants, referred to by the
// columns grant_id of oauth_tokens, oauth_authorization_codes and
// workflows, with IDs that start with "grt_": the table, its columns and
// the prefix keep their historical names, so a store written before the
// rename to "consent" reads unchanged and needs no migration.

// CreateConsent implements ConsentStore.
func (s *sqlStore) CreateConsent(ctx context.Context, projectID, subject, clientID string, scopes []string) (Consent, error) {
	if err := validateText("subject", subject, maxSubjectBytes); err != nil {
		return Consent{}, err
	}
	if err := validateText("client_id", clientID, maxURIBytes); err != nil {
		return Consent{}, err
	}
	scopes, err := normalizeScopes(scopes)
	if err != nil {
		return Consent{}, err
	}
	var g Consent
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, "project", `SELECT 1 FROM projects WHERE id = $1`, projectID); err != nil {
			return err
		}
		if err := s.lockMember(ctx, tx, projectID, subject); err != nil {
			return err
		}
		var err error
		g, err = s.insertConsent(ctx, tx, projectID, subject, clientID, scopes)
		return err
	})
	if err != nil {
		return Consent{}, err
	}
	return g, nil
}

// lockMember checks that subject is a member of the project (ErrNotMember
// otherwise) and keeps the member row locked until commit, so a concurrent
// RemoveMember waits and then revokes what this transaction records too.
func (s *sqlStore) lockMember(ctx context.Context, tx *sql.Tx, projectID, subject string) error {
	err := exists(ctx, tx, "member",
		`SELECT 1 FROM project_members WHERE project_id = $1 AND subject = $2`+s.d.forShare(), projectID, subject)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w %s", ErrNotMember, projectID)
	}
	return err
}

// insertConsent records in tx a new consent of a member (lockMember), with
// scopes normalized (normalizeScopes).
func (s *sqlStore) insertConsent(ctx context.Context, tx *sql.Tx, projectID, subject, clientID string, scopes []string) (Consent, error) {
	g := Consent{
		ID: newID("grt"), ProjectID: projectID, Subject: subject, ClientID: clientID,
		Scopes: scopes, CreatedAt: s.now(),
	}
	_, err := s.exec(ctx, tx, "creating consent",
		`INSERT INTO oauth_grants (id, project_id, subject, client_id, scopes, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6)`,
		g.ID, g.ProjectID, g.Subject, g.ClientID, strings.Join(g.Scopes, " "), s.d.timeArg(g.CreatedAt))
	if err != nil {
		return Consent{}, err
	}
	return g, nil
}

const consentColumns = `g.id, g.project_id, g.subject, g.client_id, g.scopes, g.created_at, g.revoked_at`

func scanConsent(row rowScanner) (Consent, error) {
	var g Consent
	var scopes string
	var created, revoked dbTime
	if err := row.Scan(&g.ID, &g.ProjectID, &g.Subject, &g.ClientID, &scopes, &created, &revoked); err != nil {
		return Consent{}, err
	}
	g.Scopes = strings.Fields(scopes)
	g.CreatedAt, g.RevokedAt = created.t, revoked.ptr()
	return g, nil
}

// GetConsent implements ConsentStore.
func (s *sqlStore) GetConsent(ctx context.Context, consentID string) (Consent, error) {
	return s.getConsent(ctx, s.db, consentID)
}

func (s *sqlStore) getConsent(ctx context.Context, q queryer, consentID string) (Consent, error) {
	g, err := scanConsent(q.QueryRowContext(ctx, `SELECT `+consentColumns+` FROM oauth_grants g WHERE g.id = $1`, consentID))
	if err != nil {
		return Consent{}, notFound(err, "consent")
	}
	return g, nil
}

// ListConsents implements ConsentStore.
func (s *sqlStore) ListConsents(ctx context.Context, projectID string, includeRevoked bool) ([]Consent, error) {
	return queryAll(ctx, s.db, "listing consents", scanConsent,
		`SELECT `+consentColumns+` FROM oauth_grants g
		 WHERE g.project_id = $1 AND ($2 OR g.revoked_at IS NULL)
		 ORDER BY g.created_at, g.id`,
		projectID, includeRevoked)
}

// RevokeConsent implements ConsentStore.
func (s *sqlStore) RevokeConsent(ctx context.Context, consentID string) (Consent, error) {
	var g Consent
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if g, err = s.getConsent(ctx, tx, consentID); err != nil {
			return err
		}
		if g.RevokedAt != nil {
			return nil
		}
		now := s.now()
		g.RevokedAt = &now
		if _, err := s.exec(ctx, tx, "revoking consent",
			`UPDATE oauth_grants SET revoked_at = $1 WHERE id = $2`, s.d.timeArg(now), consentID); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, "revoking the consent's tokens",
			`UPDATE oauth_tokens SET revoked_at = $1 WHERE grant_id = $2 AND revoked_at IS NULL`,
			s.d.timeArg(now), consentID)
		return err
	})
	if err != nil {
		return Consent{}, err
	}
	return g, nil
}

// activeConsent returns an unrevoked consent or ErrNotFound.
func (s *sqlStore) activeConsent(ctx context.Context, q queryer, consentID string) (Consent, error) {
	g, err := s.getConsent(ctx, q, consentID)
	if err != nil {
		return Consent{}, err
	}
	if g.RevokedAt != nil {
		return Consent{}, fmt.Errorf("%w: consent (revoked)", ErrNotFound)
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

// insertToken generates a token of kind under consentID and stores its hash.
func (s *sqlStore) insertToken(ctx context.Context, tx *sql.Tx, consentID string, kind TokenKind, familyID string, ttl time.Duration) (IssuedToken, error) {
	prefix := AccessTokenPrefix
	if kind == TokenRefresh {
		prefix = RefreshTokenPrefix
	}
	secret, err := NewToken(prefix)
	if err != nil {
		return IssuedToken{}, err
	}
	now := s.now()
	t := IssuedToken{Secret: secret, Kind: kind, ConsentID: consentID, FamilyID: familyID, ExpiresAt: now.Add(ttl)}
	_, err = s.exec(ctx, tx, "issuing token",
		`INSERT INTO oauth_tokens (token_hash, grant_id, kind, family_id, expires_at, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6)`,
		HashToken(secret), consentID, string(kind), nullString(familyID),
		s.d.timeArg(t.ExpiresAt), s.d.timeArg(now))
	if err != nil {
		return IssuedToken{}, err
	}
	return t, nil
}

// IssueAccessToken implements ConsentStore.
func (s *sqlStore) IssueAccessToken(ctx context.Context, consentID string, ttl time.Duration) (IssuedToken, error) {
	if err := validateTTL("ttl", ttl); err != nil {
		return IssuedToken{}, err
	}
	var t IssuedToken
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.activeConsent(ctx, tx, consentID); err != nil {
			return err
		}
		var err error
		t, err = s.insertToken(ctx, tx, consentID, TokenAccess, "", ttl)
		return err
	})
	if err != nil {
		return IssuedToken{}, err
	}
	return t, nil
}
