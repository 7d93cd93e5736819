package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// OAuthCapStore bounds in total what anonymous callers can make the
// authorization server store (docs/architecture.md#load-bounds): clients
// that never obtained a token and live login sessions. Past a cap the
// oldest go, in the transaction that adds the new row: refusing instead
// would let whoever fills the cap stop every honest registration and
// sign-in for as long as they keep it full, while evicting the oldest
// only reaches a row older than cap ÷ the gateway-wide rate (50 minutes
// with the defaults), far longer than an honest client takes from
// registration to its first token, or a person from authorize to consent.
type OAuthCapStore interface {
	// RegisterClientCapped is RegisterClient that then, when maxUnused is
	// positive and more than maxUnused clients have never obtained a token,
	// deletes the oldest such others (revoking their consents, as the purge
	// does) until maxUnused are left. It returns the client and how many
	// went.
	RegisterClientCapped(ctx context.Context, name string, redirectURIs []string, maxUnused int) (Client, int64, error)
	// CreateLoginSessionCapped is CreateLoginSession that then, when maxLive
	// is positive and more than maxLive sessions are stored, deletes the
	// oldest others until maxLive are left; it returns how many went.
	CreateLoginSessionCapped(ctx context.Context, s LoginSession, maxLive int) (int64, error)
}

// On PostgreSQL two transactions adding a row at once may each not see
// the other's, so the count can pass a cap by the number of concurrent
// additions until the next one; SQLite's transactions take the write lock
// first and keep it exact.

// RegisterClient implements ClientStore: uncapped.
func (s *sqlStore) RegisterClient(ctx context.Context, name string, redirectURIs []string) (Client, error) {
	c, _, err := s.RegisterClientCapped(ctx, name, redirectURIs, 0)
	return c, err
}

// RegisterClientCapped implements OAuthCapStore.
func (s *sqlStore) RegisterClientCapped(ctx context.Context, name string, redirectURIs []string, maxUnused int) (Client, int64, error) {
	if err := validateName("client_name", name); err != nil {
		return Client{}, 0, err
	}
	if err := validateRedirectURIs(redirectURIs); err != nil {
		return Client{}, 0, err
	}
	c := Client{ClientID: newID("cli"), Name: name, RedirectURIs: slices.Clone(redirectURIs), CreatedAt: s.now()}
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return Client{}, 0, fmt.Errorf("encoding redirect_uris: %w", err)
	}
	var evicted int64
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, "registering client",
			`INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)`,
			c.ClientID, c.Name, string(uris), s.d.timeArg(c.CreatedAt)); err != nil {
			return err
		}
		over, err := s.overCap(ctx, tx, `SELECT COUNT(*) FROM oauth_clients WHERE first_token_at IS NULL`, maxUnused)
		if err != nil || over == 0 {
			return err
		}
		// The oldest unused clients but the new one; its parameters come
		// after those of the statement around it, in order.
		oldest := func(first int) string {
			return fmt.Sprintf(`SELECT client_id FROM oauth_clients WHERE first_token_at IS NULL AND client_id <> $%d
			                     ORDER BY created_at, client_id LIMIT $%d`, first, first+1)
		}
		if _, err := s.exec(ctx, tx, "revoking consents of evicted unused clients",
			`UPDATE oauth_grants SET revoked_at = $1 WHERE revoked_at IS NULL AND client_id IN (`+oldest(2)+`)`,
			s.d.timeArg(c.CreatedAt), c.ClientID, over); err != nil {
			return err
		}
		res, err := s.exec(ctx, tx, "evicting unused clients",
			`DELETE FROM oauth_clients WHERE client_id IN (`+oldest(1)+`)`, c.ClientID, over)
		if err != nil {
			return err
		}
		evicted, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return Client{}, 0, err
	}
	return c, evicted, nil
}

// CreateLoginSession implements AuthorizationServerStore: uncapped.
func (s *sqlStore) CreateLoginSession(ctx context.Context, ls LoginSession) error {
	_, err := s.CreateLoginSessionCapped(ctx, ls, 0)
	return err
}

// CreateLoginSessionCapped implements OAuthCapStore.
func (s *sqlStore) CreateLoginSessionCapped(ctx context.Context, ls LoginSession, maxLive int) (int64, error) {
	if err := validateHash("session_hash", ls.SessionHash); err != nil {
		return 0, err
	}
	if err := validateText("authorize_query", ls.AuthorizeQuery, maxQueryBytes); err != nil {
		return 0, err
	}
	now := s.now()
	var evicted int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, "purging expired login sessions",
			`DELETE FROM oauth_login_sessions WHERE expires_at < $1`, s.d.timeArg(now)); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, "storing login session",
			`INSERT INTO oauth_login_sessions
			   (session_hash, authorize_query, idp_state, idp_nonce, idp_verifier, created_at, expires_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			ls.SessionHash, ls.AuthorizeQuery, ls.IdPState, ls.IdPNonce, ls.IdPVerifier,
			s.d.timeArg(now), s.d.timeArg(ls.ExpiresAt.UTC().Truncate(time.Microsecond))); err != nil {
			return err
		}
		over, err := s.overCap(ctx, tx, `SELECT COUNT(*) FROM oauth_login_sessions`, maxLive)
		if err != nil || over == 0 {
			return err
		}
		res, err := s.exec(ctx, tx, "evicting login sessions",
			`DELETE FROM oauth_login_sessions WHERE session_hash IN
			   (SELECT session_hash FROM oauth_login_sessions WHERE session_hash <> $1
			     ORDER BY created_at, session_hash LIMIT $2)`, ls.SessionHash, over)
		if err != nil {
			return err
		}
		evicted, err = res.RowsAffected()
		return err
	})
	return evicted, err
}

// overCap counts with query and returns how many rows are past limit (0
// when limit is not positive).
func (s *sqlStore) overCap(ctx context.Context, tx *sql.Tx, query string, limit int) (int64, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	if err := tx.QueryRowContext(ctx, query).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting against a cap: %w", err)
	}
	return max(n-int64(limit), 0), nil
}

// RegisterClientCapped implements OAuthCapStore.
func (t tracedStore) RegisterClientCapped(ctx context.Context, name string, redirectURIs []string, maxUnused int) (Client, int64, error) {
	var evicted int64
	c, err := call(t, ctx, "RegisterClientCapped", func(ctx context.Context) (Client, error) {
		c, n, err := t.next.RegisterClientCapped(ctx, name, redirectURIs, maxUnused)
		evicted = n
		return c, err
	})
	return c, evicted, err
}

// CreateLoginSessionCapped implements OAuthCapStore.
func (t tracedStore) CreateLoginSessionCapped(ctx context.Context, s LoginSession, maxLive int) (int64, error) {
	return call(t, ctx, "CreateLoginSessionCapped", func(ctx context.Context) (int64, error) {
		return t.next.CreateLoginSessionCapped(ctx, s, maxLive)
	})
}
