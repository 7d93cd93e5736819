package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// The points where real MCP clients (the official TypeScript SDK, IDEs,
// desktop apps) need the server to be no stricter than OAuth 2.1, RFC 8252
// and the MCP authorization spec (docs/architecture.md#authorization-server).

// TestOptionalState: PKCE carries the CSRF protection, so state may be
// absent (no state comes back, not even an empty one), short, or long;
// whatever is sent comes back as sent, on codes and on errors alike.
func TestOptionalState(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct {
		name  string
		state *string
	}{
		{"absent", nil},
		{"one character", ptr("x")},
		{"looks like the internal prefix", ptr("agw-st..x")},
		{"with reserved characters", ptr("a b&c=d/é")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := h.newAuthz()
			a.params.Del("state")
			a.state = ""
			if tc.state != nil {
				a.params.Set("state", *tc.state)
				a.state = *tc.state
			}
			b := newBrowser(t)
			p := h.login(t, b, a, "alice", "alice-pw")
			p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}})
			if p.status != http.StatusSeeOther || p.location == nil {
				t.Fatalf("consent: %d, want a 303 to the client", p.status)
			}
			q := p.location.Query()
			if got, sent := q["state"], tc.state != nil; sent && (len(got) != 1 || got[0] != *tc.state) || !sent && got != nil {
				t.Fatalf("redirect %s: state %v, sent %v", p.location, got, tc.state)
			}
			if tok := h.exchange(t, q.Get("code"), a.verifier); tok.status != http.StatusOK {
				t.Fatalf("token: %d %v", tok.status, tok.body)
			}
		})
	}
	t.Run("an error without state carries none", func(t *testing.T) {
		b := newBrowser(t)
		a := h.newAuthz()
		a.params.Del("state")
		a.state = ""
		p := h.login(t, b, a, "alice", "alice-pw")
		p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "action": {"deny"}})
		if p.location == nil || p.location.Query().Get("error") != "access_denied" || p.location.Query().Has("state") {
			t.Fatalf("got %d to %v, want access_denied and no state", p.status, p.location)
		}
	})
	t.Run("PKCE stays required without state", func(t *testing.T) {
		a := h.newAuthz()
		a.params.Del("state")
		a.params.Del("code_challenge")
		p := h.start(t, newBrowser(t), a)
		if p.location != nil || !strings.Contains(p.body, "<code>invalid_request</code>") {
			t.Fatalf("got %d to %v, want an invalid_request page", p.status, p.location)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestDefaultResource: a request without resource is for the documents
// endpoint, the only resource served; a trailing slash names it too, at
// /oauth/authorize and at /oauth/token.
func TestDefaultResource(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct {
		name string
		edit func(q url.Values)
	}{
		{"absent", func(q url.Values) { q.Del("resource") }},
		{"trailing slash", func(q url.Values) { q.Set("resource", q.Get("resource")+"/") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := h.newAuthz()
			tc.edit(a.params)
			form := []string{"resource", a.params.Get("resource")}
			if !a.params.Has("resource") {
				form = nil
			}
			tok := h.exchange(t, h.code(t, a), a.verifier, form...)
			if tok.status != http.StatusOK || !h.valid(t, tok.str("access_token")) {
				t.Fatalf("token: %d %v", tok.status, tok.body)
			}
		})
	}
}

// TestPrivateUseRedirect: a native app's private-use redirect URI is
// registered, authorized and answered with a 303 to it; the consent page
// allows its form to end there (CSP form-action names the scheme), and a
// loopback client's page names its origin.
func TestPrivateUseRedirect(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	const appRedirect = "cursor://anysphere.cursor-mcp/oauth/callback"
	app := h.register(t, map[string]any{"client_name": "Cursor", "redirect_uris": []string{appRedirect}})["client_id"].(string)
	a := h.newAuthz()
	a.params.Set("client_id", app)
	a.params.Set("redirect_uri", appRedirect)
	b := newBrowser(t)
	p := h.login(t, b, a, "alice", "alice-pw")
	if !strings.Contains(p.body, "cursor: (an app on this device)") {
		t.Errorf("the consent page does not say where the browser returns to:\n%s", p.body)
	}
	p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}})
	if p.status != http.StatusSeeOther || p.location == nil || !strings.HasPrefix(p.location.String(), appRedirect+"?") {
		t.Fatalf("consent: %d to %v, want a 303 to %s", p.status, p.location, appRedirect)
	}
	tok := h.tokenRequest(t, url.Values{
		"grant_type": {"authorization_code"}, "code": {p.location.Query().Get("code")}, "redirect_uri": {appRedirect},
		"client_id": {app}, "code_verifier": {a.verifier},
	})
	if tok.status != http.StatusOK {
		t.Fatalf("token: %d %v", tok.status, tok.body)
	}

	for _, tc := range []struct{ client, redirect, want string }{
		{app, appRedirect, "form-action 'self' cursor:;"},
		{h.clientID, redirectURI, "form-action 'self' http://127.0.0.1:9;"},
	} {
		a := h.newAuthz()
		a.params.Set("client_id", tc.client)
		a.params.Set("redirect_uri", tc.redirect)
		resp := consentResponse(t, h, a)
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, tc.want) {
			t.Errorf("consent page CSP %q, want %q", csp, tc.want)
		}
	}
}

// consentResponse logs alice in and returns the consent page's response.
func consentResponse(t *testing.T, h *harness, a *authz) *http.Response {
	t.Helper()
	b := newBrowser(t)
	h.login(t, b, a, "alice", "alice-pw")
	resp, err := b.c.Get(h.gw.URL + "/oauth/consent")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("consent page: %d", resp.StatusCode)
	}
	return resp
}

// TestNarrowingRefresh: a refresh may ask for fewer scopes and gets an
// access token with just those; the new refresh token keeps them all, and
// a wider ask is invalid_scope.
func TestNarrowingRefresh(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	a := h.newAuthz()
	a.params.Set("scope", "catalog:read documents:read")
	tok := h.exchange(t, h.code(t, a), a.verifier)
	if tok.status != http.StatusOK || tok.str("scope") != "catalog:read documents:read" {
		t.Fatalf("token: %d %v", tok.status, tok.body)
	}
	n := h.refresh(t, tok.str("refresh_token"), "scope", "documents:read")
	if n.status != http.StatusOK || n.str("scope") != "documents:read" {
		t.Fatalf("narrowing refresh: %d %v", n.status, n.body)
	}
	p, err := h.st.LookupAccessToken(context.Background(), n.str("access_token"))
	if err != nil || !slices.Equal(p.Scopes, []string{"documents:read"}) {
		t.Fatalf("narrowed token resolves to %+v, %v", p, err)
	}
	full := h.refresh(t, n.str("refresh_token"))
	if full.status != http.StatusOK || full.str("scope") != "catalog:read documents:read" {
		t.Fatalf("refresh after a narrowing: %d %v", full.status, full.body)
	}
	wantOAuthError(t, h.refresh(t, full.str("refresh_token"), "scope", "documents:read workflow:dispatch"), http.StatusBadRequest, "invalid_scope")
}

// TestRevokeOtherClient: revoking a token with another client's id is
// unauthorized_client (RFC 7009 §2.1) and leaves the token valid; an
// unknown token is 200.
func TestRevokeOtherClient(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	a := h.newAuthz()
	tok := h.exchange(t, h.code(t, a), a.verifier)
	other := h.register(t, map[string]any{"redirect_uris": []string{redirectURI}})["client_id"].(string)
	for _, tc := range []struct {
		name, token, client string
		status              int
		code                string
	}{
		{"access token of another client", tok.str("access_token"), other, http.StatusBadRequest, "unauthorized_client"},
		{"refresh token of another client", tok.str("refresh_token"), other, http.StatusBadRequest, "unauthorized_client"},
		{"unknown token", "agw_at_unknown", h.clientID, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := revokeRequest(t, h, url.Values{"token": {tc.token}, "client_id": {tc.client}})
			if got.status != tc.status || got.str("error") != tc.code {
				t.Fatalf("revoke: %d %v, want %d %q", got.status, got.body, tc.status, tc.code)
			}
			if !h.valid(t, tok.str("access_token")) {
				t.Fatal("the token was revoked")
			}
		})
	}
	if got := revokeRequest(t, h, url.Values{"token": {tok.str("refresh_token")}, "client_id": {h.clientID}}); got.status != http.StatusOK || h.valid(t, tok.str("access_token")) {
		t.Fatalf("revocation by the owner: %d, token still valid: %v", got.status, h.valid(t, tok.str("access_token")))
	}
}

func revokeRequest(t *testing.T, h *harness, form url.Values) tokenAnswer {
	t.Helper()
	resp, err := http.PostForm(h.gw.URL+"/oauth/revoke", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := tokenAnswer{status: resp.StatusCode, body: map[string]any{}}
	_ = json.NewDecoder(resp.Body).Decode(&a.body)
	return a
}
