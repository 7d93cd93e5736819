package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

func testListDeleteClients(t *testing.T, s store.Store) {
	ctx := context.Background()
	used := try(s.RegisterClient(ctx, "used", []string{"http://127.0.0.1/cb"})).must(t)
	unused := try(s.RegisterClient(ctx, "unused", []string{"http://127.0.0.1/cb"})).must(t)
	f := newFixture(t, s)
	g := f.consent(t, s, used.ClientID, "documents:read")
	redeem(t, s, g, used.ClientID)

	all := try(s.ListClients(ctx, false)).must(t)
	if len(all) != 2 || all[0].ClientID != used.ClientID || all[0].FirstTokenAt == nil || all[1].FirstTokenAt != nil {
		t.Fatalf("ListClients = %+v", all)
	}
	if u := try(s.ListClients(ctx, true)).must(t); len(u) != 1 || u[0].ClientID != unused.ClientID {
		t.Fatalf("ListClients(unused) = %+v", u)
	}
	first := *all[0].FirstTokenAt
	redeem(t, s, g, used.ClientID) // a second token keeps the first time
	if c := try(s.GetClient(ctx, used.ClientID)).must(t); c.FirstTokenAt == nil || !c.FirstTokenAt.Equal(first) {
		t.Fatalf("FirstTokenAt moved: %v, want %v", c.FirstTokenAt, first)
	}

	// Deleting a client revokes its consents, so its tokens stop at once.
	tok := try(s.IssueAccessToken(ctx, g.ID, time.Hour)).must(t)
	if err := s.DeleteClient(ctx, used.ClientID); err != nil {
		t.Fatal(err)
	}
	_, err := s.LookupAccessToken(ctx, tok.Secret)
	wantErr(t, err, store.ErrNotFound)
	if got := try(s.GetConsent(ctx, g.ID)).must(t); got.RevokedAt == nil {
		t.Fatal("the deleted client's consent is still active")
	}
	wantErr(t, s.DeleteClient(ctx, used.ClientID), store.ErrNotFound)
	if all := try(s.ListClients(ctx, false)).must(t); len(all) != 1 {
		t.Fatalf("after delete: %+v", all)
	}
}

// redeem stores and redeems a code of clientID under g, as the
// authorization server does, and returns the access token.
func redeem(t *testing.T, s store.Store, g store.Consent, clientID string) string {
	t.Helper()
	now := time.Now()
	c := store.AuthorizationCode{
		CodeHash: store.HashToken(unique("code")), RequestID: unique("req"), ConsentID: g.ID, ClientID: clientID,
		RedirectURI: "http://127.0.0.1/cb", Scopes: g.Scopes, RequestedAt: now, ExpiresAt: now.Add(time.Minute),
	}
	if err := s.CreateAuthorizationCode(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	access, _, hashed := pair(t)
	if err := s.RedeemAuthorizationCode(context.Background(), c.CodeHash, hashed...); err != nil {
		t.Fatal(err)
	}
	return access
}

// purgeScene stores one row of each kind that must go and one that must
// stay at "now", with the clock set days back for the old ones.
type purgeScene struct {
	usedClient, oldUnused, newUnused store.Client
	liveSession                      string
	liveAccess, lone                 string
	activeConsent, oldRevoked        store.Consent
	recentRevoked                    store.Consent
}

func newPurgeScene(t *testing.T, s store.Store) purgeScene {
	t.Helper()
	ctx := context.Background()
	real := time.Now().UTC().Truncate(time.Microsecond)
	at := func(d time.Duration) { store.SetClock(s, func() time.Time { return real.Add(d) }) }
	defer store.SetClock(s, func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) })
	var sc purgeScene
	f := newFixture(t, s)

	// Two days ago: a client that obtained a token, one that never did
	// (holding a consent whose code it never redeemed), a revoked consent.
	at(-48 * time.Hour)
	sc.usedClient = try(s.RegisterClient(ctx, "used", []string{"http://127.0.0.1/cb"})).must(t)
	sc.oldUnused = try(s.RegisterClient(ctx, "old unused", []string{"http://127.0.0.1/cb"})).must(t)
	unredeemed := f.consent(t, s, sc.oldUnused.ClientID, "documents:read")
	sc.activeConsent = f.consent(t, s, sc.usedClient.ClientID, "documents:read")
	sc.oldRevoked = f.consent(t, s, "admin-cli", "documents:read")
	try(s.RevokeConsent(ctx, sc.oldRevoked.ID)).must(t)
	// A revoked consent that still has a (revoked, unexpired) token stays.
	withToken := f.consent(t, s, "admin-cli", "catalog:read")
	try(s.IssueAccessToken(ctx, withToken.ID, 1000*time.Hour)).must(t)
	try(s.RevokeConsent(ctx, withToken.ID)).must(t)
	// Now: a new unused client, a live session and tokens, a consent revoked
	// a minute ago.
	at(0)
	sc.newUnused = try(s.RegisterClient(ctx, "new unused", []string{"http://127.0.0.1/cb"})).must(t)
	sc.liveSession = store.HashToken(unique("ls"))
	wantErr(t, s.CreateLoginSession(ctx, store.LoginSession{SessionHash: sc.liveSession, AuthorizeQuery: "a=b",
		IdPState: "s", IdPNonce: "n", IdPVerifier: "v", ExpiresAt: real.Add(10 * time.Minute)}), nil)
	sc.liveAccess = redeem(t, s, sc.activeConsent, sc.usedClient.ClientID)
	sc.lone = try(s.IssueAccessToken(ctx, sc.activeConsent.ID, time.Hour)).must(t).Secret
	sc.recentRevoked = f.consent(t, s, "admin-cli", "workflow:read")
	try(s.RevokeConsent(ctx, sc.recentRevoked.ID)).must(t)

	// Back to two days ago (after the live rows, because storing a session
	// or a code purges expired ones on the way): an expired session, and
	// an expired code and tokens of the used client.
	at(-48 * time.Hour)
	expiredSession := store.LoginSession{SessionHash: store.HashToken(unique("ls")), AuthorizeQuery: "a=b",
		IdPState: "s", IdPNonce: "n", IdPVerifier: "v", ExpiresAt: real.Add(-47 * time.Hour)}
	wantErr(t, s.CreateLoginSession(ctx, expiredSession), nil)
	c := store.AuthorizationCode{CodeHash: store.HashToken(unique("code")), RequestID: unique("req"), ConsentID: sc.activeConsent.ID,
		ClientID: sc.usedClient.ClientID, RedirectURI: "http://127.0.0.1/cb", Scopes: []string{"documents:read"},
		RequestedAt: real.Add(-48 * time.Hour), ExpiresAt: real.Add(-48*time.Hour + time.Minute)}
	wantErr(t, s.CreateAuthorizationCode(ctx, c), nil)
	_, _, hashed := pair(t)
	for i := range hashed {
		hashed[i].ExpiresAt = real.Add(-47 * time.Hour)
	}
	wantErr(t, s.RedeemAuthorizationCode(ctx, c.CodeHash, hashed...), nil)

	_ = unredeemed
	return sc
}

var purgePolicy = store.PurgePolicy{UnusedClientTTL: 24 * time.Hour, RevokedConsentRetention: 24 * time.Hour}

func testOAuthPurge(t *testing.T, s store.Store) {
	ctx := context.Background()
	sc := newPurgeScene(t, s)
	before := try(s.CountOAuthRows(ctx)).must(t)

	res := try(s.PurgeOAuth(ctx, purgePolicy)).must(t)
	want := map[string]int64{"login_sessions": 1, "codes": 1, "tokens": 2, "clients": 1, "grants": 1}
	if !res.Ran || len(res.Deleted) != len(want) {
		t.Fatalf("purge = %+v, want %v", res, want)
	}
	for k, n := range want {
		if res.Deleted[k] != n {
			t.Errorf("deleted %s = %d, want %d (all: %v)", k, res.Deleted[k], n, res.Deleted)
		}
	}
	after := try(s.CountOAuthRows(ctx)).must(t)
	if after.Clients != before.Clients-1 || after.UnusedClients != 1 || after.LoginSessions != 1 || after.Codes != 1 {
		t.Errorf("rows before %+v, after %+v", before, after)
	}

	// What must stay, stays.
	try(s.GetClient(ctx, sc.usedClient.ClientID)).must(t)
	try(s.GetClient(ctx, sc.newUnused.ClientID)).must(t)
	_, err := s.GetClient(ctx, sc.oldUnused.ClientID)
	wantErr(t, err, store.ErrNotFound)
	try(s.GetLoginSession(ctx, sc.liveSession)).must(t)
	try(s.LookupAccessToken(ctx, sc.liveAccess)).must(t)
	try(s.LookupAccessToken(ctx, sc.lone)).must(t)
	try(s.GetConsent(ctx, sc.recentRevoked.ID)).must(t)
	_, err = s.GetConsent(ctx, sc.oldRevoked.ID)
	wantErr(t, err, store.ErrNotFound)

	// Idempotent: a second run finds nothing.
	res = try(s.PurgeOAuth(ctx, purgePolicy)).must(t)
	for k, n := range res.Deleted {
		if n != 0 {
			t.Errorf("second purge deleted %d %s", n, k)
		}
	}
	// A zero policy keeps clients and consents.
	newPurgeScene(t, s)
	res = try(s.PurgeOAuth(ctx, store.PurgePolicy{})).must(t)
	if res.Deleted["clients"] != 0 || res.Deleted["grants"] != 0 || res.Deleted["tokens"] != 2 {
		t.Errorf("zero policy: %v", res.Deleted)
	}
}

// concurrentPurges runs four purges at once, as replicas on one database
// would, and returns what they deleted together by table and how many of
// them ran; any error fails the test.
func concurrentPurges(t *testing.T, purge func() (store.PurgeResult, error)) (map[string]int64, int) {
	t.Helper()
	const n = 4
	results := make([]store.PurgeResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = purge() })
	}
	wg.Wait()
	total := map[string]int64{}
	ran := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("purge %d: %v", i, errs[i])
		}
		if results[i].Ran {
			ran++
		}
		for k, v := range results[i].Deleted {
			total[k] += v
		}
	}
	return total, ran
}

// testConcurrentPurges: purges running at once (replicas on one database)
// delete every row exactly once between them and fail nowhere; on
// PostgreSQL, those that find the lock taken skip.
func testConcurrentPurges(t *testing.T, s store.Store) {
	ctx := context.Background()
	for range 3 {
		newPurgeScene(t, s)
	}
	total, ran := concurrentPurges(t, func() (store.PurgeResult, error) { return s.PurgeOAuth(ctx, purgePolicy) })
	// Storing a live session or code purges expired ones on the way, so
	// only the last scene's expired session and code are left to purge.
	want := map[string]int64{"login_sessions": 1, "codes": 1, "tokens": 6, "clients": 3, "grants": 3}
	for k, v := range want {
		if total[k] != v {
			t.Errorf("together the purges deleted %d %s, want %d (%v)", total[k], k, v, total)
		}
	}
	if ran == 0 {
		t.Error("no purge ran")
	}
}
