package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/store"
)

// errStoreDown is a store that does not answer (PostgreSQL unreachable).
var errStoreDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

// failingStep is the authorization server's store with one method made
// to fail, from when fail names it, as a store that went down would.
type failingStep struct {
	oauth.Store
	mu   sync.Mutex
	down string
}

func (f *failingStep) fail(method string) { f.mu.Lock(); f.down = method; f.mu.Unlock() }

func (f *failingStep) isDown(method string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down == method
}

func (f *failingStep) GetClient(ctx context.Context, id string) (store.Client, error) {
	if f.isDown("GetClient") {
		return store.Client{}, errStoreDown
	}
	return f.Store.GetClient(ctx, id)
}

func (f *failingStep) CreateLoginSessionCapped(ctx context.Context, s store.LoginSession, n int) (int64, error) {
	if f.isDown("CreateLoginSessionCapped") {
		return 0, errStoreDown
	}
	return f.Store.CreateLoginSessionCapped(ctx, s, n)
}

func (f *failingStep) GetLoginSession(ctx context.Context, h string) (store.LoginSession, error) {
	if f.isDown("GetLoginSession") {
		return store.LoginSession{}, errStoreDown
	}
	return f.Store.GetLoginSession(ctx, h)
}

func (f *failingStep) SetLoginSubject(ctx context.Context, h, subject string) error {
	if f.isDown("SetLoginSubject") {
		return errStoreDown
	}
	return f.Store.SetLoginSubject(ctx, h, subject)
}

func (f *failingStep) ConsentChoices(ctx context.Context, subject, clientID string) ([]store.ConsentChoice, error) {
	if f.isDown("ConsentChoices") {
		return nil, errStoreDown
	}
	return f.Store.ConsentChoices(ctx, subject, clientID)
}

func (f *failingStep) AnswerConsent(ctx context.Context, ans store.ConsentAnswer) (store.Consent, error) {
	if f.isDown("AnswerConsent") {
		return store.Consent{}, errStoreDown
	}
	return f.Store.AnswerConsent(ctx, ans)
}

// TestSignInStoreOutageNamed: when the store fails at any browser step of
// a sign-in — starting it, the identity provider's return, the consent
// page, the consent answer — the person sees a 503 page saying sign-in is
// unavailable because of the gateway's store, with Retry-After, never
// "your sign-in session has ended" or "this authorization request is not
// valid" (which blame them and send them round again) or a bare 500.
func TestSignInStoreOutageNamed(t *testing.T) {
	for _, c := range []struct {
		method string
		// at is the step that meets the failure: "authorize", "login"
		// (the provider's return and the consent page) or "consent".
		at string
	}{
		{"GetClient", "authorize"},
		{"CreateLoginSessionCapped", "authorize"},
		{"GetLoginSession", "login"},
		{"SetLoginSubject", "login"},
		{"ConsentChoices", "login"},
		{"AnswerConsent", "consent"},
	} {
		t.Run(c.method, func(t *testing.T) {
			f := &failingStep{}
			h := newHarness(t, harnessOptions{wrapStore: func(s oauth.Store) oauth.Store { f.Store = s; return f }})
			b, a := newBrowser(t), h.newAuthz()
			if c.at == "authorize" {
				f.fail(c.method)
			}
			p := h.start(t, b, a)
			if c.at != "authorize" {
				m := hiddenID.FindStringSubmatch(p.body)
				if m == nil {
					t.Fatalf("no login form: %d %s", p.status, p.body)
				}
				if c.at == "login" {
					f.fail(c.method)
				}
				p = b.post(t, h.idp.Issuer()+"/login", url.Values{"id": {m[1]}, "username": {"alice"}, "password": {"alice-pw"}})
				if c.at == "consent" {
					f.fail(c.method)
					p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}})
				}
			}
			if p.status != http.StatusServiceUnavailable || p.retryAfter == "" || !strings.Contains(p.body, "Sign-in is unavailable") ||
				!strings.Contains(p.body, "store") {
				t.Fatalf("store failing at %s: %d (Retry-After %q) %s", c.method, p.status, p.retryAfter, p.body)
			}
		})
	}
}
