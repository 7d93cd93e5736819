package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/httprate"
)

// TestRefusedBearers: once an address has had its allowance of bearers
// refused, its next bearers are answered 429 without reaching the
// authenticator (no store lookup), whether they are valid or not; other
// addresses, and requests without a bearer, are unaffected.
func TestRefusedBearers(t *testing.T) {
	lookups := 0
	auth := AuthenticatorFunc(func(_ context.Context, bearer string) (*Principal, error) {
		lookups++
		if bearer == "good" {
			return &Principal{Kind: OAuthConsent, Key: "grant:1", ScopesKnown: true}, nil
		}
		return nil, ErrInvalidToken
	})
	var rejected []string
	refused := NewRefusedBearers(BudgetOptions{RefusedBearersPerWindow: 3, Window: time.Minute,
		Rejected: func(b string) { rejected = append(rejected, b) }})
	h := Authenticate(auth, AuthOptions{Required: true, Challenge: Challenge{ResourceMetadataURL: "https://gw/.well-known/x"}, Refused: refused})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	call := func(ip, bearer string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/mcp/documents", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		rec := &Record{}
		setFrom(rec, ip)
		req = req.WithContext(WithRecord(req.Context(), rec))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}

	if w := call("192.0.2.1", "good"); w.Code != http.StatusNoContent {
		t.Fatalf("a valid bearer: %d", w.Code)
	}
	for i := range 3 {
		if w := call("192.0.2.1", "made-up"); w.Code != http.StatusUnauthorized {
			t.Fatalf("refusal %d: %d, want 401", i+1, w.Code)
		}
	}
	if lookups != 4 {
		t.Fatalf("%d lookups, want 4", lookups)
	}
	for _, bearer := range []string{"made-up", "good"} {
		w := call("192.0.2.1", bearer)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "60" {
			t.Fatalf("bearer %q past the allowance: %d, Retry-After %q", bearer, w.Code, w.Header().Get("Retry-After"))
		}
		var body struct {
			Error struct {
				Code       string `json:"code"`
				Budget     string `json:"budget"`
				RetryAfter int    `json:"retry_after_seconds"`
			} `json:"error"`
		}
		// The body repeats Retry-After, as every budget's 429 does.
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Code != "rate_limited" || body.Error.Budget != "refused_bearers" || body.Error.RetryAfter != 60 {
			t.Fatalf("429 body %s (%v)", w.Body.String(), err)
		}
	}
	if lookups != 4 {
		t.Fatalf("%d lookups after the allowance was spent, want none more", lookups-4)
	}
	if len(rejected) != 2 || rejected[0] != "refused_bearers" {
		t.Fatalf("rejections reported: %v", rejected)
	}
	if w := call("192.0.2.1", ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("no bearer from the same address: %d, want the 401 challenge", w.Code)
	}
	if w := call("192.0.2.2", "good"); w.Code != http.StatusNoContent {
		t.Fatalf("another address: %d", w.Code)
	}
	if lookups != 5 {
		t.Fatalf("%d lookups, want 5", lookups)
	}
}

// TestRefusedBearersOff: a bound of 0 is none.
func TestRefusedBearersOff(t *testing.T) {
	if NewRefusedBearers(BudgetOptions{Window: time.Minute}) != nil {
		t.Fatal("a zero bound should give no limiter")
	}
}

// TestRefusedBearersIPv6Prefix: a host rotating its address inside one
// /64 for every made-up bearer has its allowance of refusals counted once
// for the /64, so its lookups stop at the bound; the next /64 is another
// address.
func TestRefusedBearersIPv6Prefix(t *testing.T) {
	lookups := 0
	auth := AuthenticatorFunc(func(context.Context, string) (*Principal, error) { lookups++; return nil, ErrInvalidToken })
	refused := NewRefusedBearers(BudgetOptions{RefusedBearersPerWindow: 3, Window: time.Minute})
	h := Authenticate(auth, AuthOptions{Required: true, Challenge: Challenge{ResourceMetadataURL: "https://gw/.well-known/x"}, Refused: refused})(mustNotRun(t))
	statuses := map[int]int{}
	call := func(ip string, i int) int {
		r, rec := newReq(http.MethodPost, "/mcp/documents", nil)
		r.Header.Set("Authorization", fmt.Sprintf("Bearer made-up-%d", i))
		setFrom(rec, ip)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i := range 20 {
		statuses[call(fmt.Sprintf("2001:db8:1:2:%x::1", i+1), i)]++
	}
	if lookups != 3 || statuses[http.StatusUnauthorized] != 3 || statuses[http.StatusTooManyRequests] != 17 {
		t.Fatalf("20 rotating addresses in one /64: %d lookups, statuses %v; want 3 lookups, 3×401 and 17×429", lookups, statuses)
	}
	if code := call("2001:db8:1:3::1", 99); code != http.StatusUnauthorized || lookups != 4 {
		t.Fatalf("the next /64: %d after %d lookups, want its own 401 lookup", code, lookups)
	}
}

// TestStoreOutageIsNotARefusedBearer: while the token store fails, a bearer
// is answered 503 unavailable naming the token store, with Retry-After,
// never 401 invalid_token; and no such answer spends the address's
// refused-bearer allowance, so once the store is back the same address
// is served at once (no lockout).
func TestStoreOutageIsNotARefusedBearer(t *testing.T) {
	down := true
	auth := AuthenticatorFunc(func(_ context.Context, bearer string) (*Principal, error) {
		if down {
			return nil, Unavailable(PartTokenStore, errors.New("dial tcp: connection refused"))
		}
		return &Principal{Kind: OAuthConsent, Key: "grant:1", ScopesKnown: true}, nil
	})
	refused := NewRefusedBearers(BudgetOptions{RefusedBearersPerWindow: 2, Window: time.Minute})
	h := Authenticate(auth, AuthOptions{Required: true, Challenge: Challenge{ResourceMetadataURL: "https://gw/.well-known/x"}, Refused: refused})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	call := func() *httptest.ResponseRecorder {
		req, rec := newReq(http.MethodPost, "/mcp/documents", nil)
		req.Header.Set("Authorization", "Bearer agw_at_good")
		setFrom(rec, "192.0.2.1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i := range 5 {
		w := call()
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || w.Header().Get("WWW-Authenticate") != "" {
			t.Fatalf("outage call %d: %d Retry-After %q WWW-Authenticate %q", i, w.Code, w.Header().Get("Retry-After"), w.Header().Get("WWW-Authenticate"))
		}
		e := errorBody(t, w.Body.String())
		if e["code"] != "unavailable" || e["message"] != "the token store is unavailable; retry later" || e["dependency"] != PartTokenStore || e["retry_after_seconds"] != float64(1) {
			t.Fatalf("outage body %v", e)
		}
	}
	down = false
	if w := call(); w.Code != http.StatusNoContent {
		t.Fatalf("after the outage: %d %s, want served (the outage spent no allowance)", w.Code, w.Body.String())
	}
}

// TestRefusedBearersCounterDown: a refused-bearer counter that cannot be
// read (Redis down) refuses as the budget store's fault, not as "too many
// bearers refused".
func TestRefusedBearersCounterDown(t *testing.T) {
	refused := NewRefusedBearers(BudgetOptions{RefusedBearersPerWindow: 2, Window: time.Minute, Log: slog.New(slog.DiscardHandler),
		NewCounter: func(string) httprate.LimitCounter { return failingCounter{failGet: true} }})
	h := Authenticate(AuthenticatorFunc(func(context.Context, string) (*Principal, error) {
		t.Fatal("looked up although the counter could not be read")
		return nil, nil
	}), AuthOptions{Required: true, Refused: refused})(mustNotRun(t))
	req, rec := newReq(http.MethodPost, "/mcp/documents", nil)
	req.Header.Set("Authorization", "Bearer agw_at_good")
	setFrom(rec, "192.0.2.1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	e := errorBody(t, w.Body.String())
	if w.Code != http.StatusServiceUnavailable || e["code"] != "unavailable" || e["dependency"] != PartBudgetStore {
		t.Fatalf("%d %v", w.Code, e)
	}
}
