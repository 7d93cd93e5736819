package oauth_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
)

// TestRefusalsAreListed drives every refusal the authorization server
// reports to Config.Refused and checks that oauth.Refusals, which the
// metrics show at zero from the start, lists exactly the pairs reported.
func TestRefusalsAreListed(t *testing.T) {
	var mu sync.Mutex
	seen := map[oauth.Refusal]bool{}
	h := newHarness(t, harnessOptions{registrations: 1, authorizations: 7, refused: func(endpoint, reason string) {
		mu.Lock()
		seen[oauth.Refusal{Endpoint: endpoint, Reason: reason}] = true
		mu.Unlock()
	}})
	for _, tweak := range []func(a *authz){
		func(a *authz) { a.params.Set("state", strings.Repeat("s", 2049)) },
		func(a *authz) { a.params.Add("scope", "documents:read") },
		func(a *authz) { a.params.Set("redirect_uri", "http://evil@127.0.0.1:9/callback") },
		func(a *authz) { a.params.Set("response_mode", "form_post") },
	} {
		a := h.newAuthz()
		tweak(a)
		if p := h.start(t, newBrowser(t), a); p.status != http.StatusBadRequest {
			t.Fatalf("a bad authorization request: %d", p.status)
		}
	}
	for i := 0; i < 4; i++ {
		h.start(t, newBrowser(t), h.newAuthz())
	}
	// The harness registered its client; one more is over the limit.
	if status, _ := h.postJSON(t, "/oauth/register", map[string]any{"redirect_uris": []string{redirectURI}}); status != http.StatusTooManyRequests {
		t.Fatalf("a registration over the limit: %d", status)
	}

	// Within the address's rate but past the gateway-wide one: the
	// harness's own registration spent the total of 1, and the total of 2
	// authorizations goes on the first two.
	total := newHarness(t, harnessOptions{registrations: 10, totalRegistrations: 1, authorizations: 10, totalAuthorizations: 2,
		refused: func(endpoint, reason string) {
			mu.Lock()
			seen[oauth.Refusal{Endpoint: endpoint, Reason: reason}] = true
			mu.Unlock()
		}})
	if status, _ := total.postJSON(t, "/oauth/register", map[string]any{"redirect_uris": []string{redirectURI}}); status != http.StatusTooManyRequests {
		t.Fatalf("a registration over the total: %d", status)
	}
	for i := 0; i < 3; i++ {
		total.start(t, newBrowser(t), total.newAuthz())
	}

	mu.Lock()
	defer mu.Unlock()
	listed := map[oauth.Refusal]bool{}
	for _, r := range oauth.Refusals {
		listed[r] = true
		if !seen[r] {
			t.Errorf("%v is listed but was not reported", r)
		}
	}
	for r := range seen {
		if !listed[r] {
			t.Errorf("%v was reported but is not in oauth.Refusals", r)
		}
	}
}
