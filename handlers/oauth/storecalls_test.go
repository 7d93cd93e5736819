package oauth_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/store"
)

// countingStore records each call the authorization server makes to its
// store, by method name.
type countingStore struct {
	oauth.Store
	mu    sync.Mutex
	calls []string
}

func (c *countingStore) note(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, name)
}

// take returns the calls recorded since the last take.
func (c *countingStore) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func (c *countingStore) CreateAuthorizationCode(ctx context.Context, a store.AuthorizationCode) error {
	c.note("CreateAuthorizationCode")
	return c.Store.CreateAuthorizationCode(ctx, a)
}
func (c *countingStore) SetCodeChallenge(ctx context.Context, h, ch, m string) error {
	c.note("SetCodeChallenge")
	return c.Store.SetCodeChallenge(ctx, h, ch, m)
}
func (c *countingStore) ClearCodeChallenge(ctx context.Context, h string) error {
	c.note("ClearCodeChallenge")
	return c.Store.ClearCodeChallenge(ctx, h)
}
func (c *countingStore) GetAuthorizationCode(ctx context.Context, h string) (store.AuthorizationCode, error) {
	c.note("GetAuthorizationCode")
	return c.Store.GetAuthorizationCode(ctx, h)
}
func (c *countingStore) RedeemAuthorizationCode(ctx context.Context, h string, t ...store.HashedToken) error {
	c.note("RedeemAuthorizationCode")
	return c.Store.RedeemAuthorizationCode(ctx, h, t...)
}
func (c *countingStore) RotateRefreshTokenHash(ctx context.Context, h string, t ...store.HashedToken) error {
	c.note("RotateRefreshTokenHash")
	return c.Store.RotateRefreshTokenHash(ctx, h, t...)
}
func (c *countingStore) GetToken(ctx context.Context, h string) (store.TokenRecord, error) {
	c.note("GetToken")
	return c.Store.GetToken(ctx, h)
}
func (c *countingStore) RevokeTokenFamily(ctx context.Context, f string) error {
	c.note("RevokeTokenFamily")
	return c.Store.RevokeTokenFamily(ctx, f)
}
func (c *countingStore) RevokeTokenHash(ctx context.Context, h string) error {
	c.note("RevokeTokenHash")
	return c.Store.RevokeTokenHash(ctx, h)
}
func (c *countingStore) CreateLoginSession(ctx context.Context, s store.LoginSession) error {
	c.note("CreateLoginSession")
	return c.Store.CreateLoginSession(ctx, s)
}
func (c *countingStore) CreateLoginSessionCapped(ctx context.Context, s store.LoginSession, n int) (int64, error) {
	c.note("CreateLoginSessionCapped")
	return c.Store.CreateLoginSessionCapped(ctx, s, n)
}
func (c *countingStore) GetLoginSession(ctx context.Context, h string) (store.LoginSession, error) {
	c.note("GetLoginSession")
	return c.Store.GetLoginSession(ctx, h)
}
func (c *countingStore) SetLoginSubject(ctx context.Context, h, sub string) error {
	c.note("SetLoginSubject")
	return c.Store.SetLoginSubject(ctx, h, sub)
}
func (c *countingStore) DeleteLoginSession(ctx context.Context, h string) error {
	c.note("DeleteLoginSession")
	return c.Store.DeleteLoginSession(ctx, h)
}
func (c *countingStore) GetClient(ctx context.Context, id string) (store.Client, error) {
	c.note("GetClient")
	return c.Store.GetClient(ctx, id)
}
func (c *countingStore) CreateConsent(ctx context.Context, p, sub, cl string, sc []string) (store.Consent, error) {
	c.note("CreateConsent")
	return c.Store.CreateConsent(ctx, p, sub, cl, sc)
}
func (c *countingStore) GetConsent(ctx context.Context, id string) (store.Consent, error) {
	c.note("GetConsent")
	return c.Store.GetConsent(ctx, id)
}
func (c *countingStore) ConsentChoices(ctx context.Context, sub, cl string) ([]store.ConsentChoice, error) {
	c.note("ConsentChoices")
	return c.Store.ConsentChoices(ctx, sub, cl)
}
func (c *countingStore) AnswerConsent(ctx context.Context, a store.ConsentAnswer) (store.Consent, error) {
	c.note("AnswerConsent")
	return c.Store.AnswerConsent(ctx, a)
}

// TestStoreCalls counts the store calls of each step of an authorization,
// against the budget the core is built to: a code exchange in at most 5,
// a refresh in at most 5, and authorize → answer (authorize, callback,
// consent page, consent answer) in at most maxFlowCalls, however many
// projects the person is a member of.
func TestStoreCalls(t *testing.T) {
	cs := &countingStore{}
	h := newHarness(t, harnessOptions{wrapStore: func(s oauth.Store) oauth.Store { cs.Store = s; return cs }})
	// Two projects for alice, so a step that read per project would show.
	if err := h.st.AddMember(context.Background(), h.projectB, alice); err != nil {
		t.Fatal(err)
	}
	cs.take() // the harness's registration
	a := h.newAuthz()
	code := h.code(t, a)
	flow := cs.take()
	tok := h.exchange(t, code, a.verifier)
	if tok.status != http.StatusOK {
		t.Fatalf("exchange: %d %v", tok.status, tok.body)
	}
	exchange := cs.take()
	if r := h.refresh(t, tok.str("refresh_token")); r.status != http.StatusOK {
		t.Fatalf("refresh: %d %v", r.status, r.body)
	}
	refresh := cs.take()
	t.Logf("authorize → answer: %d calls: %s", len(flow), strings.Join(flow, " "))
	t.Logf("code exchange: %d calls: %s", len(exchange), strings.Join(exchange, " "))
	t.Logf("refresh: %d calls: %s", len(refresh), strings.Join(refresh, " "))
	for _, c := range []struct {
		what  string
		calls []string
		most  int
	}{
		{"code exchange", exchange, 5},
		{"refresh", refresh, 5},
		{"authorize → answer", flow, maxFlowCalls},
	} {
		if len(c.calls) > c.most {
			t.Errorf("%s: %d store calls, want at most %d: %s", c.what, len(c.calls), c.most, strings.Join(c.calls, " "))
		}
	}
}

// maxFlowCalls is the budget of authorize → answer: 10 (17 on fosite).
// Authorize reads the client and stores the login session; the callback
// reads the session and records the subject; the consent page reads the
// session, the client, and the person's projects with their consents to
// the client in one (ConsentChoices); the answer reads the session and the
// client, then ends the session, records the consent and stores the code
// in one transaction (AnswerConsent). The client is read again at each
// step on purpose: a client deleted meanwhile is refused there.
const maxFlowCalls = 10
