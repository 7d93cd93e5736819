package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// OAuthPurgeStore removes what the authorization server no longer needs,
// so that what anonymous callers can make it store stays bounded
// (docs/architecture.md#load-bounds): expired codes, login sessions and
// tokens, clients that never obtained a token, and revoked consents nothing
// refers to any more.
type OAuthPurgeStore interface {
	// PurgeOAuth deletes, in one transaction, every row p says has expired,
	// and returns how many per table. Each deletion is a DELETE … WHERE on
	// the row's own times, so running it twice, or on two replicas one
	// after the other, deletes nothing twice; on PostgreSQL a
	// transaction-scoped advisory lock lets one replica purge at a time,
	// and a replica that finds it taken returns Ran false at once.
	PurgeOAuth(ctx context.Context, p PurgePolicy) (PurgeResult, error)
	// CountOAuthRows counts the authorization server's rows (the gauges of
	// /metrics and the tests' evidence).
	CountOAuthRows(ctx context.Context) (OAuthRowCounts, error)
}

// PurgePolicy says what has expired.
type PurgePolicy struct {
	// UnusedClientTTL: a client that never obtained a token and was
	// registered longer ago than this is deleted (its consents, made at a
	// consent but never redeemed, are revoked with it). Zero keeps them.
	UnusedClientTTL time.Duration
	// RevokedConsentRetention: a consent revoked longer ago than this, with no
	// token or code left under it, is deleted. Zero keeps them.
	RevokedConsentRetention time.Duration
}

// codeRetention keeps an expired authorization code a while, so that a
// late replay is still recognised as one (and revokes its family) rather
// than being an unknown code.
const codeRetention = time.Hour

// OAuthRowCounts are the authorization server's rows.
type OAuthRowCounts struct {
	Clients, UnusedClients, LoginSessions, Codes, Tokens, Consents int64
}

// PurgeOAuth implements OAuthPurgeStore.
func (s *sqlStore) PurgeOAuth(ctx context.Context, p PurgePolicy) (PurgeResult, error) {
	res := PurgeResult{Deleted: map[string]int64{}}
	now := s.now()
	locked, err := s.purgeTx(ctx, oauthPurgeLock, res.Deleted, func(tx *sql.Tx, del purgeDelete) error {
		if _, err := del("login_sessions", "purging login sessions",
			`DELETE FROM oauth_login_sessions WHERE expires_at < $1`, s.d.timeArg(now)); err != nil {
			return err
		}
		if _, err := del("codes", "purging authorization codes",
			`DELETE FROM oauth_authorization_codes WHERE expires_at < $1`, s.d.timeArg(now.Add(-codeRetention))); err != nil {
			return err
		}
		if _, err := del("tokens", "purging tokens",
			`DELETE FROM oauth_tokens WHERE expires_at < $1`, s.d.timeArg(now)); err != nil {
			return err
		}
		if p.UnusedClientTTL > 0 {
			cutoff := s.d.timeArg(now.Add(-p.UnusedClientTTL))
			if _, err := s.exec(ctx, tx, "revoking consents of unused clients",
				`UPDATE oauth_grants SET revoked_at = $1
				  WHERE revoked_at IS NULL AND client_id IN
				        (SELECT client_id FROM oauth_clients WHERE first_token_at IS NULL AND created_at < $2)`,
				s.d.timeArg(now), cutoff); err != nil {
				return err
			}
			if _, err := del("clients", "purging unused clients",
				`DELETE FROM oauth_clients WHERE first_token_at IS NULL AND created_at < $1`, cutoff); err != nil {
				return err
			}
		}
		if p.RevokedConsentRetention > 0 {
			if _, err := del("grants", "purging revoked consents",
				`DELETE FROM oauth_grants
				  WHERE revoked_at IS NOT NULL AND revoked_at < $1
				    AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = oauth_grants.id)
				    AND NOT EXISTS (SELECT 1 FROM oauth_authorization_codes c WHERE c.grant_id = oauth_grants.id)`,
				s.d.timeArg(now.Add(-p.RevokedConsentRetention))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return PurgeResult{}, err
	}
	res.Ran = locked
	return res, nil
}

// CountOAuthRows implements OAuthPurgeStore.
func (s *sqlStore) CountOAuthRows(ctx context.Context) (OAuthRowCounts, error) {
	var c OAuthRowCounts
	err := s.db.QueryRowContext(ctx, `SELECT
	    (SELECT COUNT(*) FROM oauth_clients),
	    (SELECT COUNT(*) FROM oauth_clients WHERE first_token_at IS NULL),
	    (SELECT COUNT(*) FROM oauth_login_sessions),
	    (SELECT COUNT(*) FROM oauth_authorization_codes),
	    (SELECT COUNT(*) FROM oauth_tokens),
	    (SELECT COUNT(*) FROM oauth_grants)`).
		Scan(&c.Clients, &c.UnusedClients, &c.LoginSessions, &c.Codes, &c.Tokens, &c.Consents)
	if err != nil {
		return OAuthRowCounts{}, fmt.Errorf("counting OAuth rows: %w", err)
	}
	return c, nil
}
