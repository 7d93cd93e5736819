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
	store TokenLookup
	log   Warner
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
// st, logging store failures (never the token) to log.
func NewStoreAuthenticator(st TokenLookup, log Warner) middleware.Authenticator {
	return storeAuthenticator{store: st, log: log}
}

// Authenticate implements middleware.Authenticator.
func (a storeAuthenticator) Authenticate(ctx context.Context, bearer string) (*middleware.Principal, error) {
	switch {
	case strings.HasPrefix(bearer, store.AccessTokenPrefix):
		p, err := a.store.LookupAccessToken(ctx, bearer)
		if err != nil {
			return nil, a.refuse(err)
		}
		return &middleware.Principal{
			Kind: middleware.OAuthConsent, Key: "grant:" + p.ConsentID,
			Scopes: p.Scopes, ScopesKnown: true,
			ProjectID: p.ProjectID, Subject: p.Subject, ConsentID: p.ConsentID,
		}, nil
	case strings.HasPrefix(bearer, store.LegacyTokenPrefix):
		t, err := a.store.LookupLegacyToken(ctx, bearer)
		if err != nil {
			return nil, a.refuse(err)
		}
		// Legacy tokens keep only their memory/task permissions: no scope.
		return &middleware.Principal{
			Kind: middleware.LegacyProjectToken, Key: "legacy:" + t.ID,
			ScopesKnown: true, ProjectID: t.ProjectID,
		}, nil
	}
	return nil, middleware.ErrInvalidToken
}

// refuse turns a lookup failure into ErrInvalidToken; a store failure
// (not a missing token) is logged, without the token, and still refused.
func (a storeAuthenticator) refuse(err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		a.log.Warn("token lookup failed; refusing the request", "error", err.Error())
	}
	return middleware.ErrInvalidToken
}
