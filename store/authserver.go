package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// AuthorizationServerStore is what the gateway's OAuth authorization server
// (handlers/oauth) keeps between requests: authorization codes, the tokens
// it generates itself (it hands the store their hashes, never the secrets)
// and the browser's login sessions. Tokens land in the same table as the
// lone access tokens ConsentStore issues for the admin CLI, so
// LookupAccessToken resolves both.
type AuthorizationServerStore interface {
	// CreateAuthorizationCode stores a code under an active consent (ErrNotFound
	// otherwise), with its PKCE challenge when it has one (method S256).
	// Expired codes are purged on the way.
	CreateAuthorizationCode(ctx context.Context, c AuthorizationCode) error
	// SetCodeChallenge binds the PKCE challenge (method S256) to a code that
	// has none yet.
	SetCodeChallenge(ctx context.Context, codeHash, challenge, method string) error
	// ClearCodeChallenge removes a code's challenge after one verification
	// attempt, so a wrong verifier cannot be retried.
	ClearCodeChallenge(ctx context.Context, codeHash string) error
	// GetAuthorizationCode returns a code, used or not, expired or not, or
	// ErrNotFound. Whether it may still be redeemed is the caller's decision.
	GetAuthorizationCode(ctx context.Context, codeHash string) (AuthorizationCode, error)
	// RedeemAuthorizationCode marks the code used and stores tokens in the
	// family the code started, under the code's consent, in one transaction.
	// A code already used is ErrTokenReused and stores nothing; a code whose
	// consent was revoked is ErrNotFound.
	RedeemAuthorizationCode(ctx context.Context, codeHash string, tokens ...HashedToken) error
	// RotateRefreshTokenHash marks an unused, unrevoked refresh token used and
	// stores tokens in its family, in one transaction. A token already used
	// or revoked is ErrTokenReused and stores nothing (the caller revokes the
	// family: it decides what reuse means).
	RotateRefreshTokenHash(ctx context.Context, refreshHash string, tokens ...HashedToken) error
	// GetToken returns a stored token with its consent, in any state, or
	// ErrNotFound.
	GetToken(ctx context.Context, tokenHash string) (TokenRecord, error)
	// RevokeTokenFamily revokes every token of a family. Revoking a revoked
	// or empty family is not an error.
	RevokeTokenFamily(ctx context.Context, familyID string) error
	// RevokeTokenHash revokes one token (an access token outside any family).
	RevokeTokenHash(ctx context.Context, tokenHash string) error

	// CreateLoginSession stores a browser login session; expired sessions
	// are purged on the way.
	CreateLoginSession(ctx context.Context, s LoginSession) error
	// GetLoginSession returns an unexpired session or ErrNotFound.
	GetLoginSession(ctx context.Context, sessionHash string) (LoginSession, error)
	// SetLoginSubject records the verified identity provider subject.
	SetLoginSubject(ctx context.Context, sessionHash, subject string) error
	// DeleteLoginSession ends a session; an absent one is not an error.
	DeleteLoginSession(ctx context.Context, sessionHash string) error

	// ConsentChoices returns what a consent page offers subject for
	// clientID, in one read: the projects subject is a member of, ordered by
	// name, each with subject's active consents to clientID there.
	ConsentChoices(ctx context.Context, subject, clientID string) ([]ConsentChoice, error)
	// AnswerConsent records an Allow in one transaction: it ends the login
	// session, which must be unexpired and signed in as a.Subject
	// (ErrNotFound otherwise, so of two answers to one session at most one
	// records anything); checks that a.Subject is a member of the project
	// (ErrNotMember otherwise); takes the subject's active consent to the
	// client on the project whose scopes are exactly those a.Scopes decides,
	// or records a new one; and stores a.Code under it, with its scopes.
	// It returns the consent. On any error nothing is stored or deleted.
	AnswerConsent(ctx context.Context, a ConsentAnswer) (Consent, error)
}

// AuthorizationCode is one authorization code, by the hash of its secret.
type AuthorizationCode struct {
	CodeHash string
	// RequestID names the authorization: the tokens redeemed from the code
	// and all their rotations form the token family of this ID.
	RequestID   string
	ConsentID   string
	ClientID    string
	RedirectURI string
	// Scopes is the sorted set the user consented to.
	Scopes              []string
	CodeChallenge       string
	CodeChallengeMethod string
	RequestedAt         time.Time
	ExpiresAt           time.Time
	UsedAt              *time.Time
}

// HashedToken is a token the authorization server generated: the store
// keeps its hash, kind and expiry; consent and family come from the code or
// refresh token it is issued under.
type HashedToken struct {
	Hash      string
	Kind      TokenKind
	ExpiresAt time.Time
	// Scopes narrows the token (a refresh that asked for fewer scopes,
	// RFC 6749 §6): a non-empty subset of the scopes of the code or refresh
	// token it is issued under. Nil means those scopes unchanged.
	Scopes []string
}

// TokenRecord is a stored token with its consent.
type TokenRecord struct {
	Hash      string
	Kind      TokenKind
	FamilyID  string
	ExpiresAt time.Time
	CreatedAt time.Time
	Revoked   bool
	Used      bool
	// Scopes are what the token allows: its own when a refresh narrowed
	// them, else its consent's.
	Scopes  []string
	Consent Consent
}

// LoginSession is one browser's way through login and consent.
type LoginSession struct {
	SessionHash    string
	AuthorizeQuery string
	IdPState       string
	IdPNonce       string
	IdPVerifier    string
	// Subject is empty until the identity provider's ID token is verified.
	Subject   string
	CreatedAt time.Time
	ExpiresAt time.Time
}

func validateHash(field, h string) error {
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return invalid(field, "want 64 lowercase hex digits")
	}
	return nil
}

// CreateAuthorizationCode implements AuthorizationServerStore.
func (s *sqlStore) CreateAuthorizationCode(ctx context.Context, c AuthorizationCode) error {
	if err := validateCode(&c); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.activeConsent(ctx, tx, c.ConsentID); err != nil {
			return err
		}
		return s.insertCode(ctx, tx, c)
	})
}

// validateCode checks a code before it is stored and normalizes its scopes.
func validateCode(c *AuthorizationCode) error {
	if err := validateHash("code_hash", c.CodeHash); err != nil {
		return err
	}
	scopes, err := normalizeScopes(c.Scopes)
	if err != nil {
		return err
	}
	c.Scopes = scopes
	if c.RequestID == "" {
		return invalid("request_id", "must not be empty")
	}
	if (c.CodeChallenge != "" || c.CodeChallengeMethod != "") && (c.CodeChallengeMethod != "S256" || c.CodeChallenge == "") {
		return invalid("code_challenge", "want a challenge with method S256")
	}
	return nil
}

// insertCode stores in tx a code that passed validateCode, under a consent
// the caller found active in tx, purging expired codes on the way.
func (s *sqlStore) insertCode(ctx context.Context, tx *sql.Tx, c AuthorizationCode) error {
	var challenge, method sql.NullString
	if c.CodeChallenge != "" {
		challenge = sql.NullString{String: c.CodeChallenge, Valid: true}
		method = sql.NullString{String: c.CodeChallengeMethod, Valid: true}
	}
	if _, err := s.exec(ctx, tx, "purging expired codes",
		`DELETE FROM oauth_authorization_codes WHERE expires_at < $1`, s.d.timeArg(s.now().Add(-codeRetention))); err != nil {
		return err
	}
	_, err := s.exec(ctx, tx, "storing authorization code",
		`INSERT INTO oauth_authorization_codes
		   (code_hash, request_id, grant_id, client_id, redirect_uri, scopes, requested_at, expires_at,
		    code_challenge, code_challenge_method)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.CodeHash, c.RequestID, c.ConsentID, c.ClientID, c.RedirectURI, strings.Join(c.Scopes, " "),
		s.d.timeArg(c.RequestedAt.UTC().Truncate(time.Microsecond)), s.d.timeArg(c.ExpiresAt.UTC().Truncate(time.Microsecond)),
		challenge, method)
	return err
}

// SetCodeChallenge implements AuthorizationServerStore.
func (s *sqlStore) SetCodeChallenge(ctx context.Context, codeHash, challenge, method string) error {
	if method != "S256" || challenge == "" {
		return invalid("code_challenge", "want a challenge with method S256")
	}
	res, err := s.exec(ctx, s.db, "binding code challenge",
		`UPDATE oauth_authorization_codes SET code_challenge = $1, code_challenge_method = $2
		  WHERE code_hash = $3 AND code_challenge IS NULL AND used_at IS NULL`, challenge, method, codeHash)
	if err != nil {
		return err
	}
	return oneRow(res, "authorization code")
}

// ClearCodeChallenge implements AuthorizationServerStore.
func (s *sqlStore) ClearCodeChallenge(ctx context.Context, codeHash string) error {
	_, err := s.exec(ctx, s.db, "clearing code challenge",
		`UPDATE oauth_authorization_codes SET code_challenge = NULL, code_challenge_method = NULL WHERE code_hash = $1`, codeHash)
	return err
}

// GetAuthorizationCode implements AuthorizationServerStore.
func (s *sqlStore) GetAuthorizationCode(ctx context.Context, codeHash string) (AuthorizationCode, error) {
	var c AuthorizationCode
	var scopes string
	var challenge, method sql.NullString
	var requested, expires, used dbTime
	err := s.db.QueryRowContext(ctx,
		`SELECT code_hash, request_id, grant_id, client_id, redirect_uri, scopes, code_challenge,
		        code_challenge_method, requested_at, expires_at, used_at
		   FROM oauth_authorization_codes WHERE code_hash = $1`, codeHash).
		Scan(&c.CodeHash, &c.RequestID, &c.ConsentID, &c.ClientID, &c.RedirectURI, &scopes, &challenge,
			&method, &requested, &expires, &used)
	if err != nil {
		return AuthorizationCode{}, notFound(err, "authorization code")
	}
	c.Scopes = strings.Fields(scopes)
	c.CodeChallenge, c.CodeChallengeMethod = challenge.String, method.String
	c.RequestedAt, c.ExpiresAt, c.UsedAt = requested.t, expires.t, used.ptr()
	return c, nil
}

// RedeemAuthorizationCode implements AuthorizationServerStore.
func (s *sqlStore) RedeemAuthorizationCode(ctx context.Context, codeHash string, tokens ...HashedToken) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var requestID, consentID string
		err := tx.QueryRowContext(ctx,
			`SELECT request_id, grant_id FROM oauth_authorization_codes WHERE code_hash = $1`, codeHash).
			Scan(&requestID, &consentID)
		if err != nil {
			return notFound(err, "authorization code")
		}
		res, err := s.exec(ctx, tx, "redeeming authorization code",
			`UPDATE oauth_authorization_codes SET used_at = $1 WHERE code_hash = $2 AND used_at IS NULL`,
			s.d.timeArg(s.now()), codeHash)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("redeeming authorization code: %w", err)
		} else if n != 1 {
			return fmt.Errorf("%w: authorization code already redeemed", ErrTokenReused)
		}
		g, err := s.activeConsent(ctx, tx, consentID)
		if err != nil {
			return err
		}
		// The client has now obtained a token: the unused-client purge
		// leaves it alone from here on.
		if _, err := s.exec(ctx, tx, "marking the client used",
			`UPDATE oauth_clients SET first_token_at = $1
			  WHERE client_id = (SELECT client_id FROM oauth_authorization_codes WHERE code_hash = $2) AND first_token_at IS NULL`,
			s.d.timeArg(s.now()), codeHash); err != nil {
			return err
		}
		return s.insertHashed(ctx, tx, consentID, requestID, g.Scopes, tokens)
	})
}

// RotateRefreshTokenHash implements AuthorizationServerStore. The mark is a
// conditional UPDATE, so of two concurrent rotations exactly one succeeds.
func (s *sqlStore) RotateRefreshTokenHash(ctx context.Context, refreshHash string, tokens ...HashedToken) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		t, err := s.getToken(ctx, tx, refreshHash)
		if err != nil {
			return err
		}
		if t.kind != TokenRefresh {
			return fmt.Errorf("%w: refresh token", ErrNotFound)
		}
		if t.consent.RevokedAt != nil {
			return fmt.Errorf("%w: refresh token (consent revoked)", ErrNotFound)
		}
		res, err := s.exec(ctx, tx, "marking refresh token used",
			`UPDATE oauth_tokens SET used_at = $1
			  WHERE token_hash = $2 AND used_at IS NULL AND revoked_at IS NULL`,
			s.d.timeArg(s.now()), refreshHash)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("marking refresh token used: %w", err)
		} else if n != 1 {
			return fmt.Errorf("%w: refresh token already used or revoked", ErrTokenReused)
		}
		// A refresh retires the family's access tokens issued before it: a
		// client that refreshes holds the new one, and a stolen old one
		// stops working at the next refresh, not at its expiry.
		if _, err := s.exec(ctx, tx, "retiring the family's access tokens",
			`UPDATE oauth_tokens SET revoked_at = $1
			  WHERE family_id = $2 AND kind = $3 AND revoked_at IS NULL`,
			s.d.timeArg(s.now()), t.familyID, string(TokenAccess)); err != nil {
			return err
		}
		return s.insertHashed(ctx, tx, t.consent.ID, t.familyID, t.effectiveScopes(), tokens)
	})
}

// insertHashed stores tokens generated by the authorization server; a
// token's own scopes must lie within allowed (those of what it is issued
// under): a refresh narrows, never widens.
func (s *sqlStore) insertHashed(ctx context.Context, tx *sql.Tx, consentID, familyID string, allowed []string, tokens []HashedToken) error {
	now := s.now()
	for _, t := range tokens {
		var own sql.NullString
		if t.Scopes != nil {
			scopes, err := normalizeScopes(t.Scopes)
			if err != nil {
				return err
			}
			for _, sc := range scopes {
				if !slices.Contains(allowed, sc) {
					return invalid("scopes", "%s is not held by what the token is issued under", quote(sc))
				}
			}
			own = sql.NullString{String: strings.Join(scopes, " "), Valid: true}
		}
		if err := validateHash("token_hash", t.Hash); err != nil {
			return err
		}
		if t.Kind != TokenAccess && t.Kind != TokenRefresh {
			return invalid("kind", "%q", t.Kind)
		}
		if !t.ExpiresAt.After(now) {
			return invalid("expires_at", "already expired")
		}
		if _, err := s.exec(ctx, tx, "storing token",
			`INSERT INTO oauth_tokens (token_hash, grant_id, kind, family_id, expires_at, created_at, scopes)
			 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			t.Hash, consentID, string(t.Kind), familyID,
			s.d.timeArg(t.ExpiresAt.UTC().Truncate(time.Microsecond)), s.d.timeArg(now), own); err != nil {
			return err
		}
	}
	return nil
}

// GetToken implements AuthorizationServerStore.
func (s *sqlStore) GetToken(ctx context.Context, tokenHash string) (TokenRecord, error) {
	t, err := s.getToken(ctx, s.db, tokenHash)
	if err != nil {
		return TokenRecord{}, err
	}
	var created dbTime
	if err := s.db.QueryRowContext(ctx, `SELECT created_at FROM oauth_tokens WHERE token_hash = $1`, tokenHash).Scan(&created); err != nil {
		return TokenRecord{}, notFound(err, "token")
	}
	return TokenRecord{
		Hash: tokenHash, Kind: t.kind, FamilyID: t.familyID, ExpiresAt: t.expiresAt, CreatedAt: created.t,
		Revoked: t.revoked, Used: t.used, Scopes: t.effectiveScopes(), Consent: t.consent,
	}, nil
}

// RevokeTokenFamily implements AuthorizationServerStore.
func (s *sqlStore) RevokeTokenFamily(ctx context.Context, familyID string) error {
	if familyID == "" {
		return invalid("family_id", "must not be empty")
	}
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.revokeFamily(ctx, tx, familyID) })
}

// RevokeTokenHash implements AuthorizationServerStore.
func (s *sqlStore) RevokeTokenHash(ctx context.Context, tokenHash string) error {
	_, err := s.exec(ctx, s.db, "revoking token",
		`UPDATE oauth_tokens SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL`,
		s.d.timeArg(s.now()), tokenHash)
	return err
}

// maxQueryBytes bounds a stored authorization request.
const maxQueryBytes = 16 << 10

// GetLoginSession implements AuthorizationServerStore.
func (s *sqlStore) GetLoginSession(ctx context.Context, sessionHash string) (LoginSession, error) {
	var ls LoginSession
	var subject sql.NullString
	var created, expires dbTime
	err := s.db.QueryRowContext(ctx,
		`SELECT session_hash, authorize_query, idp_state, idp_nonce, idp_verifier, subject, created_at, expires_at
		   FROM oauth_login_sessions WHERE session_hash = $1`, sessionHash).
		Scan(&ls.SessionHash, &ls.AuthorizeQuery, &ls.IdPState, &ls.IdPNonce, &ls.IdPVerifier, &subject, &created, &expires)
	if err != nil {
		return LoginSession{}, notFound(err, "login session")
	}
	if !s.now().Before(expires.t) {
		return LoginSession{}, fmt.Errorf("%w: login session (expired)", ErrNotFound)
	}
	ls.Subject, ls.CreatedAt, ls.ExpiresAt = subject.String, created.t, expires.t
	return ls, nil
}

// SetLoginSubject implements AuthorizationServerStore.
func (s *sqlStore) SetLoginSubject(ctx context.Context, sessionHash, subject string) error {
	if err := validateText("subject", subject, maxSubjectBytes); err != nil {
		return err
	}
	res, err := s.exec(ctx, s.db, "recording login subject",
		`UPDATE oauth_login_sessions SET subject = $1 WHERE session_hash = $2 AND subject IS NULL AND expires_at > $3`,
		subject, sessionHash, s.d.timeArg(s.now()))
	if err != nil {
		return err
	}
	return oneRow(res, "login session")
}

// DeleteLoginSession implements AuthorizationServerStore.
func (s *sqlStore) DeleteLoginSession(ctx context.Context, sessionHash string) error {
	_, err := s.exec(ctx, s.db, "deleting login session",
		`DELETE FROM oauth_login_sessions WHERE session_hash = $1`, sessionHash)
	return err
}

// oneRow turns an UPDATE that matched no row into ErrNotFound.
func oneRow(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	return nil
}
