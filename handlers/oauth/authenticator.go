package oauth

import (
	"context"
	"errors"
	"strings"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
)

// storeAuthenticator resolves the bearers of /mcp/documents against the
// store: gateway-issued access tokens (agw_at_…) become OAuth consent
// principals with the consent's scopes; legacy project tokens (agw_lt_…)
// become principals with no scope at all, so the scope gate refuses them
// every document tool. The lookup runs on every request, so a revoked
// consent or token stops working at once.
type storeAuthenticator struct {
	store   TokenLookup
	log     Warner
	breaker *middleware.Breaker
}

// TokenLookup is the part of the store a bearer is resolved against.
type TokenLookup interface {
	LookupAccessToken(ctx context.Context, secret string) (store.TokenConsent, error)
	LookupLegacyToken(ctx context.Context, secret string) (store.LegacyToken, error)
}

// Warner is where a failed lookup is logged (a *slog.Logger).
type Warner interface {
	Warn(msg string, args ...any)
}

// NewStoreAuthenticator returns the authenticator of /mcp/documents over
// st, logging store failures (never the token) to log. A store failure is
// answered as the store's (middleware.ErrUnavailable), never as a refused
// token; breaker, when set, makes lookups fail at once while the store is
// known to be down.
func NewStoreAuthenticator(st TokenLookup, log Warner, breaker *middleware.Breaker) middleware.Authenticator {
	return storeAuthenticator{store: st, log: log, breaker: breaker}
}

// lookup runs one store lookup through the breaker. A missing row is the
// store answering, and a caller that went away says nothing of the store:
// neither counts against it.
func (a storeAuthenticator) lookup(ctx context.Context, fn func() error) error {
	return a.breaker.Do(fn, func(err error) bool {
		return !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil
	})
}

// Authenticate implements middleware.Authenticator.
func (a storeAuthenticator) Authenticate(ctx context.Context, bearer string) (*middleware.Principal, error) {
	switch {
	case strings.HasPrefix(bearer, store.AccessTokenPrefix):
		var p store.TokenConsent
		err := a.lookup(ctx, func() (err error) { p, err = a.store.LookupAccessToken(ctx, bearer); return err })
		if err != nil {
			return nil, a.refuse(ctx, err)
		}
		return &middleware.Principal{
			Kind: middleware.OAuthConsent, Key: "grant:" + p.ConsentID,
			Scopes: p.Scopes, ScopesKnown: true,
			ProjectID: p.ProjectID, Subject: p.Subject, ConsentID: p.ConsentID, ClientID: p.ClientID,
		}, nil
	case strings.HasPrefix(bearer, store.LegacyTokenPrefix):
		var t store.LegacyToken
		err := a.lookup(ctx, func() (err error) { t, err = a.store.LookupLegacyToken(ctx, bearer); return err })
		if err != nil {
			return nil, a.refuse(ctx, err)
		}
		// Legacy tokens keep only their memory/task permissions: no scope.
		return &middleware.Principal{
			Kind: middleware.LegacyProjectToken, Key: "legacy:" + t.ID,
			ScopesKnown: true, ProjectID: t.ProjectID,
		}, nil
	}
	return nil, middleware.ErrInvalidToken
}

// refuse turns a missing token into ErrInvalidToken and any other failure
// into the token store's unavailability, logged once (without the token)
// with the request id.
func (a storeAuthenticator) refuse(ctx context.Context, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return middleware.ErrInvalidToken
	}
	a.log.Warn("the token store is unavailable; answered unavailable",
		"request_id", middleware.RecordFromContext(ctx).RequestID(), "error", err.Error())
	return middleware.Unavailable(middleware.PartTokenStore, err)
}
