package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
)

type fakeTokens struct{ err error }

func (f fakeTokens) LookupAccessToken(_ context.Context, secret string) (store.TokenConsent, error) {
	if f.err != nil {
		return store.TokenConsent{}, f.err
	}
	if secret != "agw_at_good" {
		return store.TokenConsent{}, fmt.Errorf("%w: access token", store.ErrNotFound)
	}
	return store.TokenConsent{ConsentID: "grt_1", ProjectID: "prj_1", Subject: "alice", Scopes: []string{"documents:read"}}, nil
}

func (f fakeTokens) LookupLegacyToken(_ context.Context, secret string) (store.LegacyToken, error) {
	if secret != "agw_lt_good" {
		return store.LegacyToken{}, fmt.Errorf("%w: legacy token", store.ErrNotFound)
	}
	return store.LegacyToken{ID: "ltk_1", ProjectID: "prj_1", Permissions: []string{"memory", "task"}}, nil
}

func TestStoreAuthenticator(t *testing.T) {
	var logs bytes.Buffer
	a := storeAuthenticator{store: fakeTokens{}, log: slog.New(slog.NewJSONHandler(&logs, nil))}
	ctx := context.Background()
	p, err := a.Authenticate(ctx, "agw_at_good")
	if err != nil || p.Kind != middleware.OAuthConsent || p.Key != "grant:grt_1" || p.ProjectID != "prj_1" || !p.HasScope("documents:read") {
		t.Fatalf("consent principal %+v, %v", p, err)
	}
	p, err = a.Authenticate(ctx, "agw_lt_good")
	if err != nil || p.Kind != middleware.LegacyProjectToken || p.Key != "legacy:ltk_1" || p.HasScope("documents:read") || !p.ScopesKnown {
		t.Fatalf("legacy principal %+v, %v", p, err)
	}
	for _, bad := range []string{"agw_at_bad", "agw_lt_bad", "agw_rt_refresh", "ghp_github", ""} {
		if _, err := a.Authenticate(ctx, bad); !errors.Is(err, middleware.ErrInvalidToken) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	// A store failure is the store's, not the token's: unavailable, never
	// ErrInvalidToken, logged with the request id and without the token.
	a.store = fakeTokens{err: errors.New("database down")}
	rec := &middleware.Record{}
	rctx := middleware.WithRecord(ctx, rec)
	if _, err := a.Authenticate(rctx, "agw_at_secret-canary"); !errors.Is(err, middleware.ErrUnavailable) || errors.Is(err, middleware.ErrInvalidToken) {
		t.Fatalf("store failure: %v", err)
	}
	if !bytes.Contains(logs.Bytes(), []byte("database down")) || bytes.Contains(logs.Bytes(), []byte("canary")) || !bytes.Contains(logs.Bytes(), []byte(`"request_id"`)) {
		t.Fatalf("logs: %s", logs.String())
	}
}

// TestStoreAuthenticatorBreaker: after a store failure the breaker answers
// the next lookups unavailable without asking the store; a missing token
// is the store answering and opens nothing.
func TestStoreAuthenticatorBreaker(t *testing.T) {
	b := middleware.NewBreaker(time.Hour, nil)
	calls := 0
	st := &countingTokens{calls: &calls, fakeTokens: fakeTokens{}}
	a := storeAuthenticator{store: st, log: slog.New(slog.DiscardHandler), breaker: b}
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, "agw_at_bad"); !errors.Is(err, middleware.ErrInvalidToken) || b.Open() {
		t.Fatalf("missing token: %v, open %v", err, b.Open())
	}
	st.fakeTokens = fakeTokens{err: errors.New("database down")}
	if _, err := a.Authenticate(ctx, "agw_at_good"); !errors.Is(err, middleware.ErrUnavailable) || !b.Open() {
		t.Fatalf("store failure: %v, open %v", err, b.Open())
	}
	before := calls
	if _, err := a.Authenticate(ctx, "agw_lt_good"); !errors.Is(err, middleware.ErrUnavailable) || calls != before {
		t.Fatalf("open breaker: %v, %d store calls", err, calls-before)
	}
}

type countingTokens struct {
	fakeTokens
	calls *int
}

func (c *countingTokens) LookupAccessToken(ctx context.Context, s string) (store.TokenConsent, error) {
	*c.calls++
	return c.fakeTokens.LookupAccessToken(ctx, s)
}

func (c *countingTokens) LookupLegacyToken(ctx context.Context, s string) (store.LegacyToken, error) {
	*c.calls++
	return c.fakeTokens.LookupLegacyToken(ctx, s)
}
