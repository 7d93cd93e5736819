package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestAuthorizationServerStore is the authorization server's storage
// contract, on both backends.
func TestAuthorizationServerStore(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"code redemption is single use", testCodeRedemption},
		{"code challenge binds once and clears", testCodeChallenge},
		{"code of a revoked consent", testCodeRevokedConsent},
		{"hashed refresh rotation", testHashedRotation},
		{"rotation retires the family's access tokens", testRotationRetiresAccess},
		{"rotation narrows, never widens", testRotationNarrows},
		{"concurrent code redemption", testConcurrentRedemption},
		{"concurrent hashed refresh rotation", testConcurrentHashedRotation},
		{"login sessions", testLoginSessions},
		{"consent choices in one read", testConsentChoices},
		{"a consent answer ends the session, records the consent and stores the code", testAnswerConsent},
		{"refused consent answers store nothing", testAnswerConsentRefusals},
		{"a consent answer is one transaction", testAnswerConsentAtomic},
		{"concurrent answers to one session", testConcurrentAnswers},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.Each(t, tc.run)
		})
	}
}

// newCode stores a code under a fresh consent and returns it.
func newCode(t *testing.T, s store.Store, scopes ...string) (store.AuthorizationCode, store.Consent) {
	t.Helper()
	f := newFixture(t, s)
	g := f.consent(t, s, "cli_as", scopes...)
	c := store.AuthorizationCode{
		CodeHash: store.HashToken(unique("code")), RequestID: unique("req"), ConsentID: g.ID, ClientID: "cli_as",
		RedirectURI: "http://127.0.0.1/cb", Scopes: scopes, RequestedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute),
	}
	if err := s.CreateAuthorizationCode(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c, g
}

// pair returns fresh access and refresh tokens as secrets and hashed forms.
func pair(t *testing.T) (access, refresh string, hashed []store.HashedToken) {
	t.Helper()
	access = try(store.NewToken(store.AccessTokenPrefix)).must(t)
	refresh = try(store.NewToken(store.RefreshTokenPrefix)).must(t)
	exp := time.Now().Add(time.Hour)
	return access, refresh, []store.HashedToken{
		{Hash: store.HashToken(access), Kind: store.TokenAccess, ExpiresAt: exp},
		{Hash: store.HashToken(refresh), Kind: store.TokenRefresh, ExpiresAt: exp},
	}
}

func testCodeRedemption(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, g := newCode(t, s, "documents:read")
	got := try(s.GetAuthorizationCode(ctx, c.CodeHash)).must(t)
	if got.ConsentID != g.ID || got.RequestID != c.RequestID || got.UsedAt != nil || got.RedirectURI != c.RedirectURI {
		t.Fatalf("stored code %+v", got)
	}
	access, refresh, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	p := try(s.LookupAccessToken(ctx, access)).must(t)
	if p.ConsentID != g.ID || p.ProjectID != g.ProjectID || !p.HasScope("documents:read") {
		t.Fatalf("principal %+v", p)
	}
	rec := try(s.GetToken(ctx, store.HashToken(refresh))).must(t)
	if rec.FamilyID != c.RequestID || rec.Kind != store.TokenRefresh || rec.Consent.ID != g.ID {
		t.Fatalf("refresh record %+v", rec)
	}
	_, _, again := pair(t)
	wantErr(t, s.RedeemAuthorizationCode(ctx, c.CodeHash, again...), store.ErrTokenReused)
	if got := try(s.GetAuthorizationCode(ctx, c.CodeHash)).must(t); got.UsedAt == nil {
		t.Error("used_at not set")
	}
	wantErr(t, s.RevokeTokenFamily(ctx, c.RequestID), nil)
	_, err := s.LookupAccessToken(ctx, access)
	wantErr(t, err, store.ErrNotFound)
}

func testCodeChallenge(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, _ := newCode(t, s, "documents:read")
	wantErr(t, s.SetCodeChallenge(ctx, c.CodeHash, "abc", "plain"), store.ErrInvalid)
	wantErr(t, s.SetCodeChallenge(ctx, c.CodeHash, "abc", "S256"), nil)
	wantErr(t, s.SetCodeChallenge(ctx, c.CodeHash, "other", "S256"), store.ErrNotFound) // bound once
	if got := try(s.GetAuthorizationCode(ctx, c.CodeHash)).must(t); got.CodeChallenge != "abc" || got.CodeChallengeMethod != "S256" {
		t.Fatalf("challenge %+v", got)
	}
	wantErr(t, s.ClearCodeChallenge(ctx, c.CodeHash), nil)
	if got := try(s.GetAuthorizationCode(ctx, c.CodeHash)).must(t); got.CodeChallenge != "" {
		t.Fatalf("challenge not cleared: %+v", got)
	}
}

func testCodeRevokedConsent(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, g := newCode(t, s, "documents:read")
	try(s.RevokeConsent(ctx, g.ID)).must(t)
	_, _, hashed := pair(t)
	wantErr(t, s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...), store.ErrNotFound)
	c.CodeHash = store.HashToken(unique("code"))
	wantErr(t, s.CreateAuthorizationCode(ctx, c), store.ErrNotFound)
}

func testHashedRotation(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, _ := newCode(t, s, "documents:read")
	_, refresh, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	access2, refresh2, hashed2 := pair(t)
	if err := s.RotateRefreshTokenHash(ctx, store.HashToken(refresh), hashed2...); err != nil {
		t.Fatal(err)
	}
	try(s.LookupAccessToken(ctx, access2)).must(t)
	if rec := try(s.GetToken(ctx, store.HashToken(refresh2))).must(t); rec.FamilyID != c.RequestID {
		t.Fatalf("rotated family %q, want %q", rec.FamilyID, c.RequestID)
	}
	if rec := try(s.GetToken(ctx, store.HashToken(refresh))).must(t); !rec.Used {
		t.Fatal("rotated token not marked used")
	}
	_, _, hashed3 := pair(t)
	wantErr(t, s.RotateRefreshTokenHash(ctx, store.HashToken(refresh), hashed3...), store.ErrTokenReused)
	// An access token is not a refresh token.
	wantErr(t, s.RotateRefreshTokenHash(ctx, store.HashToken(access2), hashed3...), store.ErrNotFound)
}

func testConcurrentRedemption(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, _ := newCode(t, s, "documents:read")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, hashed := pair(t)
			errs[i] = s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent redemptions succeeded (%v), want exactly 1", ok, len(errs), errs)
	}
}

// testConcurrentHashedRotation: of concurrent rotations of one refresh
// token exactly one stores its tokens; the others are reuse and store
// nothing (the authorization server then revokes the family).
func testConcurrentHashedRotation(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, _ := newCode(t, s, "documents:read")
	_, refresh, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make([]error, n)
	access := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		var h []store.HashedToken
		access[i], _, h = pair(t)
		wg.Go(func() { errs[i] = s.RotateRefreshTokenHash(ctx, store.HashToken(refresh), h...) })
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		_, lerr := s.LookupAccessToken(ctx, access[i])
		switch {
		case err == nil:
			ok++
			wantErr(t, lerr, nil)
		case errors.Is(err, store.ErrTokenReused):
			wantErr(t, lerr, store.ErrNotFound) // the loser stored nothing
		default:
			t.Errorf("rotation %d: %v", i, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent rotations succeeded, want exactly 1", ok, n)
	}
}

func testLoginSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	h := store.HashToken(unique("session"))
	ls := store.LoginSession{
		SessionHash: h, AuthorizeQuery: "client_id=x&state=y", IdPState: "st", IdPNonce: "n", IdPVerifier: "v",
		ExpiresAt: time.Now().Add(time.Minute),
	}
	wantErr(t, s.CreateLoginSession(ctx, ls), nil)
	got := try(s.GetLoginSession(ctx, h)).must(t)
	if got.AuthorizeQuery != ls.AuthorizeQuery || got.IdPState != "st" || got.Subject != "" {
		t.Fatalf("session %+v", got)
	}
	wantErr(t, s.SetLoginSubject(ctx, h, "alice"), nil)
	wantErr(t, s.SetLoginSubject(ctx, h, "mallory"), store.ErrNotFound) // set once
	if got := try(s.GetLoginSession(ctx, h)).must(t); got.Subject != "alice" {
		t.Fatalf("subject %q", got.Subject)
	}
	wantErr(t, s.DeleteLoginSession(ctx, h), nil)
	_, err := s.GetLoginSession(ctx, h)
	wantErr(t, err, store.ErrNotFound)

	expired := ls
	expired.SessionHash = store.HashToken(unique("session"))
	expired.ExpiresAt = time.Now().Add(-time.Second)
	wantErr(t, s.CreateLoginSession(ctx, expired), nil)
	_, err = s.GetLoginSession(ctx, expired.SessionHash)
	wantErr(t, err, store.ErrNotFound)
}

// testRotationRetiresAccess: a refresh revokes every access token the
// family held before it, and leaves other families alone.
func testRotationRetiresAccess(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, _ := newCode(t, s, "documents:read")
	access1, refresh1, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	other, _ := newCode(t, s, "documents:read")
	otherAccess, _, otherHashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, other.CodeHash, otherHashed...); err != nil {
		t.Fatal(err)
	}
	access2, refresh2, hashed2 := pair(t)
	wantErr(t, s.RotateRefreshTokenHash(ctx, store.HashToken(refresh1), hashed2...), nil)
	_, err := s.LookupAccessToken(ctx, access1)
	wantErr(t, err, store.ErrNotFound)
	try(s.LookupAccessToken(ctx, access2)).must(t)
	try(s.LookupAccessToken(ctx, otherAccess)).must(t)
	access3, _, hashed3 := pair(t)
	wantErr(t, s.RotateRefreshTokenHash(ctx, store.HashToken(refresh2), hashed3...), nil)
	_, err = s.LookupAccessToken(ctx, access2)
	wantErr(t, err, store.ErrNotFound)
	try(s.LookupAccessToken(ctx, access3)).must(t)
}

// testRotationNarrows: an access token issued with fewer scopes resolves
// to them; a scope outside the refresh token's is refused and stores
// nothing; the refresh token keeps its scopes.
func testRotationNarrows(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, _ := newCode(t, s, "catalog:read", "documents:read")
	_, refresh, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	wide, _, wideHashed := pair(t)
	wideHashed[0].Scopes = []string{"documents:read", "workflow:dispatch"}
	wantErr(t, s.RotateRefreshTokenHash(ctx, store.HashToken(refresh), wideHashed...), store.ErrInvalid)
	_, err := s.LookupAccessToken(ctx, wide)
	wantErr(t, err, store.ErrNotFound)

	narrow, refresh2, narrowHashed := pair(t)
	narrowHashed[0].Scopes = []string{"documents:read"}
	wantErr(t, s.RotateRefreshTokenHash(ctx, store.HashToken(refresh), narrowHashed...), nil)
	p := try(s.LookupAccessToken(ctx, narrow)).must(t)
	if len(p.Scopes) != 1 || p.Scopes[0] != "documents:read" {
		t.Fatalf("narrowed principal scopes %v", p.Scopes)
	}
	if rec := try(s.GetToken(ctx, store.HashToken(refresh2))).must(t); len(rec.Scopes) != 2 {
		t.Fatalf("the new refresh token lost scopes: %v", rec.Scopes)
	}
	if rec := try(s.GetToken(ctx, store.HashToken(narrow))).must(t); len(rec.Scopes) != 1 {
		t.Fatalf("token record scopes %v", rec.Scopes)
	}
}
