package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// TestFlow is the happy path: code, tokens bound to the stored consent,
// refresh rotation, reuse revoking the family, and revocation.
func TestFlow(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	a := h.newAuthz()
	tok := h.exchange(t, h.code(t, a), a.verifier)
	if tok.status != http.StatusOK {
		t.Fatalf("token: %d %v", tok.status, tok.body)
	}
	access, refresh := tok.str("access_token"), tok.str("refresh_token")
	if !strings.HasPrefix(access, store.AccessTokenPrefix) || !strings.HasPrefix(refresh, store.RefreshTokenPrefix) {
		t.Fatalf("tokens %q %q", access, refresh)
	}
	if tok.str("token_type") != "bearer" || tok.str("scope") != "documents:read" {
		t.Errorf("token response %v", tok.body)
	}
	if exp, _ := tok.body["expires_in"].(float64); exp < 3500 || exp > 3600 {
		t.Errorf("expires_in %v, want about an hour", tok.body["expires_in"])
	}
	p, err := h.st.LookupAccessToken(context.Background(), access)
	if err != nil {
		t.Fatal(err)
	}
	if p.ProjectID != h.projectA || p.Subject != alice || p.ClientID != h.clientID || !slices.Equal(p.Scopes, []string{"documents:read"}) {
		t.Fatalf("principal %+v", p)
	}

	// Rotation: a new pair; the access token issued before it is retired.
	r1 := h.refresh(t, refresh)
	if r1.status != http.StatusOK || r1.str("refresh_token") == refresh || r1.str("refresh_token") == "" {
		t.Fatalf("refresh: %d %v", r1.status, r1.body)
	}
	if !h.valid(t, r1.str("access_token")) {
		t.Fatal("rotated access token not valid")
	}
	if h.valid(t, access) {
		t.Fatal("the access token issued before the refresh is still valid")
	}
	// Reuse of the rotated refresh token revokes the whole family.
	wantOAuthError(t, h.refresh(t, refresh), http.StatusBadRequest, "invalid_grant")
	for _, tk := range []string{access, r1.str("access_token")} {
		if h.valid(t, tk) {
			t.Error("an access token of the family survived refresh token reuse")
		}
	}
	wantOAuthError(t, h.refresh(t, r1.str("refresh_token")), http.StatusBadRequest, "invalid_grant")

	// Revocation of a fresh authorization's access token ends it.
	a2 := h.newAuthz()
	tok2 := h.exchange(t, h.code(t, a2), a2.verifier)
	resp, err := http.PostForm(h.gw.URL+"/oauth/revoke", url.Values{"token": {tok2.str("access_token")}, "client_id": {h.clientID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if h.valid(t, tok2.str("access_token")) {
		t.Fatal("revoked access token still valid")
	}
	wantOAuthError(t, h.refresh(t, tok2.str("refresh_token")), http.StatusBadRequest, "invalid_grant")
}

// TestRefusals covers each way an authorization must fail.
func TestRefusals(t *testing.T) {
	h := newHarness(t, harnessOptions{})

	t.Run("wrong PKCE verifier", func(t *testing.T) {
		a := h.newAuthz()
		code := h.code(t, a)
		wantOAuthError(t, h.exchange(t, code, a.verifier[:len(a.verifier)-1]+"x"), http.StatusBadRequest, "invalid_grant")
		// One attempt burns the challenge: the right verifier is too late.
		wantOAuthError(t, h.exchange(t, code, a.verifier), http.StatusBadRequest, "invalid_grant")
	})
	t.Run("no PKCE verifier at the token endpoint", func(t *testing.T) {
		a := h.newAuthz()
		code := h.code(t, a)
		wantOAuthError(t, h.exchange(t, code, ""), http.StatusBadRequest, "invalid_grant")
	})
	t.Run("wrong resource at the token endpoint", func(t *testing.T) {
		a := h.newAuthz()
		code := h.code(t, a)
		wantOAuthError(t, h.exchange(t, code, a.verifier, "resource", "https://elsewhere.example/mcp"), http.StatusBadRequest, "invalid_target")
		// The refusal came before the code was touched.
		if tok := h.exchange(t, code, a.verifier); tok.status != http.StatusOK {
			t.Fatalf("exchange after a refused resource: %d %v", tok.status, tok.body)
		}
	})
	t.Run("redirect_uri mismatch at the token endpoint", func(t *testing.T) {
		a := h.newAuthz()
		code := h.code(t, a)
		wantOAuthError(t, h.exchange(t, code, a.verifier, "redirect_uri", "http://127.0.0.1:9/other"), http.StatusBadRequest, "invalid_grant")
	})
	t.Run("replayed code", func(t *testing.T) {
		a := h.newAuthz()
		code := h.code(t, a)
		first := h.exchange(t, code, a.verifier)
		if first.status != http.StatusOK {
			t.Fatalf("first exchange: %d %v", first.status, first.body)
		}
		wantOAuthError(t, h.exchange(t, code, a.verifier), http.StatusBadRequest, "invalid_grant")
		if h.valid(t, first.str("access_token")) {
			t.Fatal("tokens of a replayed code were not revoked")
		}
		wantOAuthError(t, h.refresh(t, first.str("refresh_token")), http.StatusBadRequest, "invalid_grant")
	})
	t.Run("code of another client", func(t *testing.T) {
		a := h.newAuthz()
		code := h.code(t, a)
		other := h.register(t, map[string]any{"redirect_uris": []string{redirectURI}})["client_id"].(string)
		wantOAuthError(t, h.exchange(t, code, a.verifier, "client_id", other), http.StatusBadRequest, "invalid_grant")
	})
	t.Run("consent without CSRF token", func(t *testing.T) {
		b := newBrowser(t)
		a := h.newAuthz()
		p := h.login(t, b, a, "alice", "alice-pw")
		csrf := csrfOf(t, p)
		for _, form := range []url.Values{
			{"project": {h.projectA}, "action": {"allow"}},
			{"csrf_token": {"forged"}, "project": {h.projectA}, "action": {"allow"}},
		} {
			p := h.consent(t, b, form)
			if p.status != http.StatusForbidden || p.location != nil || !strings.Contains(p.body, "CSRF") {
				t.Fatalf("consent %v: got %d to %v", form, p.status, p.location)
			}
		}
		// The session survives a forged post: the real form still works.
		codeFrom(t, h.consent(t, b, url.Values{"csrf_token": {csrf}, "project": {h.projectA}, "action": {"allow"}}), a)
	})
	t.Run("consent from another origin", func(t *testing.T) {
		b := newBrowser(t)
		a := h.newAuthz()
		p := h.login(t, b, a, "alice", "alice-pw")
		p = b.post(t, h.gw.URL+"/oauth/consent", url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}},
			"Origin", "https://attacker.example")
		if p.status != http.StatusForbidden || p.location != nil {
			t.Fatalf("cross-origin consent: %d to %v", p.status, p.location)
		}
	})
	t.Run("consent for a project the user is not a member of", func(t *testing.T) {
		for _, project := range []string{h.projectB, "prj_doesnotexist"} {
			b := newBrowser(t)
			a := h.newAuthz()
			p := h.login(t, b, a, "alice", "alice-pw")
			if strings.Contains(p.body, h.projectB) {
				t.Fatal("the consent page offers a project alice is not a member of")
			}
			p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {project}, "action": {"allow"}})
			if p.status != http.StatusForbidden || p.location != nil || !strings.Contains(p.body, "not a member") {
				t.Fatalf("consent for %s: %d to %v", project, p.status, p.location)
			}
		}
		if gs, _ := h.st.ListConsents(context.Background(), h.projectB, true); len(gs) != 0 {
			t.Fatalf("consents in project B: %+v", gs)
		}
	})
	t.Run("consent offers only the user's projects", func(t *testing.T) {
		p := h.login(t, newBrowser(t), h.newAuthz(), "bob", "bob-pw")
		if !strings.Contains(p.body, "project-b") || strings.Contains(p.body, "project-a") {
			t.Fatalf("bob's consent page should offer project-b only:\n%s", p.body)
		}
		p = h.login(t, newBrowser(t), h.newAuthz(), "carol", "carol-pw")
		if !strings.Contains(p.body, "not a member of any project") || strings.Contains(p.body, `value="allow"`) {
			t.Fatalf("carol (no project) should be told so, with nothing to allow:\n%s", p.body)
		}
	})
	t.Run("deny", func(t *testing.T) {
		b := newBrowser(t)
		a := h.newAuthz()
		p := h.login(t, b, a, "alice", "alice-pw")
		p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "action": {"deny"}})
		if p.location == nil || p.location.Query().Get("error") != "access_denied" || p.location.Query().Get("state") != a.state {
			t.Fatalf("deny: %d to %v", p.status, p.location)
		}
		// The session is over.
		if p := h.consent(t, b, url.Values{"csrf_token": {"x"}, "action": {"allow"}}); p.status != http.StatusBadRequest {
			t.Fatalf("consent after the session ended: %d", p.status)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		b := newBrowser(t)
		p := h.start(t, b, h.newAuthz())
		m := hiddenID.FindStringSubmatch(p.body)
		p = b.post(t, h.idp.Issuer()+"/login", url.Values{"id": {m[1]}, "username": {"alice"}, "password": {"nope"}})
		if p.status != http.StatusUnauthorized || strings.Contains(p.body, "csrf_token") {
			t.Fatalf("wrong password: %d", p.status)
		}
	})
	t.Run("callback with a forged state", func(t *testing.T) {
		b := newBrowser(t)
		h.start(t, b, h.newAuthz()) // the session cookie is set
		p := b.get(t, h.gw.URL+"/oauth/callback?code=x&state=forged")
		if p.status != http.StatusBadRequest || p.location != nil {
			t.Fatalf("forged callback: %d", p.status)
		}
	})
	t.Run("callback without a session", func(t *testing.T) {
		p := newBrowser(t).get(t, h.gw.URL+"/oauth/callback?code=x&state=y")
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "session") {
			t.Fatalf("callback without session: %d", p.status)
		}
	})
}

// TestExpiredCode uses a one-second code lifetime.
func TestExpiredCode(t *testing.T) {
	h := newHarness(t, harnessOptions{codeTTL: time.Second})
	a := h.newAuthz()
	code := h.code(t, a)
	time.Sleep(1500 * time.Millisecond)
	wantOAuthError(t, h.exchange(t, code, a.verifier), http.StatusBadRequest, "invalid_grant")
}

// TestScopeWidening: a refresh cannot widen a consent, and a wider request
// goes through a consent page that marks the new scope and makes a new consent,
// leaving the old one as it was.
func TestScopeWidening(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	a := h.newAuthz()
	tok := h.exchange(t, h.code(t, a), a.verifier)
	if tok.status != http.StatusOK {
		t.Fatalf("token: %v", tok.body)
	}
	wantOAuthError(t, h.refresh(t, tok.str("refresh_token"), "scope", "documents:read catalog:read"), http.StatusBadRequest, "invalid_scope")
	// The refused refresh did not use the token up.
	same := h.refresh(t, tok.str("refresh_token"), "scope", "documents:read")
	if same.status != http.StatusOK || same.str("scope") != "documents:read" {
		t.Fatalf("same-scope refresh: %d %v", same.status, same.body)
	}

	wide := h.newAuthz()
	wide.params.Set("scope", "documents:read catalog:read")
	b := newBrowser(t)
	p := h.login(t, b, wide, "alice", "alice-pw")
	// catalog:read is new; documents:read is already granted.
	for _, want := range []string{
		"<code>catalog:read</code>: read instruction catalogs\n<strong class=\"new\">New</strong>",
		"<code>documents:read</code>: read allowlisted documents\n<span class=\"note\">Already granted",
	} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("consent page lacks %q:\n%s", want, p.body)
		}
	}
	code := codeFrom(t, h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}}), wide)
	wideTok := h.exchange(t, code, wide.verifier)
	if wideTok.str("scope") != "catalog:read documents:read" && wideTok.str("scope") != "documents:read catalog:read" {
		t.Fatalf("wide token scope %q", wideTok.str("scope"))
	}
	gs, err := h.st.ListConsents(ctx, h.projectA, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || !slices.Equal(gs[0].Scopes, []string{"documents:read"}) || !slices.Equal(gs[1].Scopes, []string{"catalog:read", "documents:read"}) {
		t.Fatalf("consents after the wider consent: %+v", gs)
	}
	old, err := h.st.LookupAccessToken(ctx, same.str("access_token"))
	if err != nil || !slices.Equal(old.Scopes, []string{"documents:read"}) {
		t.Fatalf("the old token changed: %+v %v", old, err)
	}
}

// TestRegistration checks RFC 7591 limits.
func TestRegistration(t *testing.T) {
	h := newHarness(t, harnessOptions{registrations: 100})
	ok := h.register(t, map[string]any{
		"client_name": "Inspector", "redirect_uris": []string{"http://localhost:6274/oauth/callback", "https://app.example/cb"},
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "logo_uri": "https://app.example/logo.png",
	})
	if ok["token_endpoint_auth_method"] != "none" || !strings.HasPrefix(ok["client_id"].(string), "cli_") {
		t.Fatalf("registration answer %v", ok)
	}
	// Native apps' private-use schemes (RFC 8252 §7.1) register.
	for _, uri := range []string{
		"cursor://anysphere.cursor-mcp/oauth/callback",
		"vscode://vscode.github-authentication/did-authenticate", "com.example.app:/oauth2redirect",
	} {
		if got := h.register(t, map[string]any{"redirect_uris": []string{uri}}); got["redirect_uris"].([]any)[0] != uri {
			t.Fatalf("registered %v, want %s", got["redirect_uris"], uri)
		}
	}
	long := "https://app.example/" + strings.Repeat("a", 2100)
	many := make([]string, 11)
	for i := range many {
		many[i] = "https://app.example/cb"
	}
	for _, tc := range []struct {
		name string
		md   map[string]any
		code string
	}{
		{"no redirect URIs", map[string]any{"client_name": "x"}, "invalid_redirect_uri"},
		{"http on a public host", map[string]any{"redirect_uris": []string{"http://app.example/cb"}}, "invalid_redirect_uri"},
		{"javascript", map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
		{"javascript with slashes", map[string]any{"redirect_uris": []string{"JavaScript://x/%0aalert(1)"}}, "invalid_redirect_uri"},
		{"data", map[string]any{"redirect_uris": []string{"data:/text/html,x"}}, "invalid_redirect_uri"},
		{"file", map[string]any{"redirect_uris": []string{"file:///etc/passwd"}}, "invalid_redirect_uri"},
		{"vbscript", map[string]any{"redirect_uris": []string{"vbscript://x/y"}}, "invalid_redirect_uri"},
		{"ms-msdt", map[string]any{"redirect_uris": []string{"ms-msdt:/id PCWDiagnostic"}}, "invalid_redirect_uri"},
		{"ms-msdt with slashes", map[string]any{"redirect_uris": []string{"ms-msdt://x/y"}}, "invalid_redirect_uri"},
		{"search-ms", map[string]any{"redirect_uris": []string{"search-ms:/query=x"}}, "invalid_redirect_uri"},
		{"unlisted single-label scheme", map[string]any{"redirect_uris": []string{"myapp://cb/x"}}, "invalid_redirect_uri"},
		{"one bad scheme among good URIs", map[string]any{"redirect_uris": []string{"https://app.example/cb", "ms-officecmd:/x"}}, "invalid_redirect_uri"},
		{"private-use scheme without a path", map[string]any{"redirect_uris": []string{"com.example.app:cb"}}, "invalid_redirect_uri"},
		{"private-use scheme with user info", map[string]any{"redirect_uris": []string{"cursor://u@anysphere.cursor-mcp/oauth/callback"}}, "invalid_redirect_uri"},
		{"private-use scheme with a fragment", map[string]any{"redirect_uris": []string{"com.example.app:/cb#x"}}, "invalid_redirect_uri"},
		{"https without a host", map[string]any{"redirect_uris": []string{"https:/cb"}}, "invalid_redirect_uri"},
		{"fragment", map[string]any{"redirect_uris": []string{"https://app.example/cb#x"}}, "invalid_redirect_uri"},
		{"user info", map[string]any{"redirect_uris": []string{"https://u:p@app.example/cb"}}, "invalid_redirect_uri"},
		{"relative", map[string]any{"redirect_uris": []string{"/cb"}}, "invalid_redirect_uri"},
		{"too long", map[string]any{"redirect_uris": []string{long}}, "invalid_redirect_uri"},
		{"too many", map[string]any{"redirect_uris": many}, "invalid_redirect_uri"},
		{"confidential client", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata"},
		{"client credentials", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "grant_types": []string{"client_credentials"}}, "invalid_client_metadata"},
		{"implicit", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "response_types": []string{"token"}}, "invalid_client_metadata"},
		{"control characters in the name", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "client_name": "a\u0007b"}, "invalid_client_metadata"},
		{"C1 control in the name", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "client_name": "a\u009bb"}, "invalid_client_metadata"},
		{"right-to-left override in the name", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "client_name": "Safe\u202eedoC"}, "invalid_client_metadata"},
		{"bidi isolate in the name", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "client_name": "a\u2067b"}, "invalid_client_metadata"},
		{"zero-width space in the name", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "client_name": "Claude\u200bCode"}, "invalid_client_metadata"},
		{"byte order mark in the name", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "client_name": "\ufeffCursor"}, "invalid_client_metadata"},
		{"Arabic letter mark in the name", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "client_name": "a\u061cb"}, "invalid_client_metadata"},
		{"redirect URI with a bidi override", map[string]any{"redirect_uris": []string{"https://moc.elgoog\u202e.evil.example/cb"}}, "invalid_redirect_uri"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := h.postJSON(t, "/oauth/register", tc.md)
			if status != http.StatusBadRequest || body["error"] != tc.code {
				t.Fatalf("got %d %v, want 400 %s", status, body, tc.code)
			}
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		resp, err := http.Post(h.gw.URL+"/oauth/register", "application/json", strings.NewReader("{"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// TestMetadata checks RFC 8414 metadata, and that an unconfigured server
// says it is unconfigured everywhere.
func TestMetadata(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	resp, err := http.Get(h.gw.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	decode(t, resp, &md)
	for k, want := range map[string]any{
		"issuer":                                h.gw.URL,
		"authorization_endpoint":                h.gw.URL + "/oauth/authorize",
		"token_endpoint":                        h.gw.URL + "/oauth/token",
		"registration_endpoint":                 h.gw.URL + "/oauth/register",
		"revocation_endpoint":                   h.gw.URL + "/oauth/revoke",
		"code_challenge_methods_supported":      []any{"S256"},
		"token_endpoint_auth_methods_supported": []any{"none"},
		"grant_types_supported":                 []any{"authorization_code", "refresh_token"},
		"response_types_supported":              []any{"code"},
		"scopes_supported":                      []any{"catalog:read", "documents:read"},
	} {
		if !equalJSON(md[k], want) {
			t.Errorf("%s = %v, want %v", k, md[k], want)
		}
	}

	u := newHarness(t, harnessOptions{unconfigured: true})
	for _, c := range []struct{ method, path, wantType string }{
		{"GET", "/.well-known/oauth-authorization-server", "application/json"},
		{"POST", "/oauth/register", "application/json"},
		{"POST", "/oauth/token", "application/json"},
		{"POST", "/oauth/revoke", "application/json"},
		{"GET", "/oauth/authorize", "text/html"},
		{"GET", "/oauth/consent", "text/html"},
	} {
		req, _ := http.NewRequest(c.method, u.gw.URL+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.wantType) || !strings.Contains(body, "oidc.issuer") {
			t.Errorf("%s %s unconfigured: %d %s %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}

func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestRegistrationRateLimit: open registration is bounded per address.
func TestRegistrationRateLimit(t *testing.T) {
	h := newHarness(t, harnessOptions{registrations: 3}) // the harness registered one
	md := map[string]any{"redirect_uris": []string{redirectURI}}
	for i := 0; i < 2; i++ {
		h.register(t, md)
	}
	status, body := h.postJSON(t, "/oauth/register", md)
	if status != http.StatusTooManyRequests || body["error"] != "temporarily_unavailable" {
		t.Fatalf("fourth registration in a minute: %d %v", status, body)
	}
}

// TestCORS: browser-based clients may fetch the metadata and call the JSON
// endpoints from their own origin; the browser pages get no CORS headers.
func TestCORS(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, path := range []string{"/oauth/register", "/oauth/token", "/oauth/revoke"} {
		req, _ := http.NewRequest(http.MethodOptions, h.gw.URL+path, nil)
		req.Header.Set("Origin", "http://localhost:6274")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Errorf("preflight %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
	status, _ := h.postJSON(t, "/oauth/register", map[string]any{"redirect_uris": []string{redirectURI}})
	if status != http.StatusCreated {
		t.Fatalf("register: %d", status)
	}
	resp, err := http.Get(h.gw.URL + "/oauth/authorize")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("the authorize page must not allow cross-origin reads")
	}
}

// TestAuthorizeErrorsArePages: every client is unverified (open
// registration, RFC 9700 §4.11.2), so an error found before the user has
// seen the consent page is shown on the gateway's page with its error
// code; the browser is never sent to the redirect URI and no login
// session starts, whichever check fails first. A client registered with
// an attacker's redirect URI gets a page too.
func TestAuthorizeErrorsArePages(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	evil := h.register(t, map[string]any{"client_name": "Evil", "redirect_uris": []string{"https://evil.example/cb"}})["client_id"].(string)
	noPKCE := func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }
	for _, tc := range []struct {
		name string
		edit func(q url.Values)
		code string
	}{
		{"missing PKCE", noPKCE, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		{"challenge without a method", func(q url.Values) { q.Del("code_challenge_method") }, "invalid_request"},
		{"wrong resource", func(q url.Values) { q.Set("resource", "https://elsewhere.example/mcp") }, "invalid_target"},
		{"forgejo resource", func(q url.Values) { q.Set("resource", strings.Replace(q.Get("resource"), "documents", "forgejo", 1)) }, "invalid_target"},
		{"resource with another path", func(q url.Values) { q.Set("resource", q.Get("resource")+"/x") }, "invalid_target"},
		{"resource with two trailing slashes", func(q url.Values) { q.Set("resource", q.Get("resource")+"//") }, "invalid_target"},
		{"two resources", func(q url.Values) { q.Add("resource", q.Get("resource")) }, "invalid_target"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "documents:read admin:all") }, "invalid_scope"},
		{"implicit flow", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		{"no response type", func(q url.Values) { q.Del("response_type") }, "unsupported_response_type"},
		{"oversized state", func(q url.Values) { q.Set("state", strings.Repeat("s", 2049)) }, "invalid_request"},
		{"repeated scope", func(q url.Values) { q.Add("scope", "documents:read") }, "invalid_request"},
		{"form_post", func(q url.Values) { q.Set("response_mode", "form_post") }, "unsupported_response_mode"},
		{"unregistered redirect URI", func(q url.Values) { q.Set("redirect_uri", "https://attacker.example/cb") }, "invalid_request"},
		{"redirect URI with another path", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:9/other") }, "invalid_request"},
		{"unknown client", func(q url.Values) { q.Set("client_id", "cli_unknown") }, "invalid_client"},
		// Both orders: the client and redirect URI are checked first, and
		// either way nothing is redirected.
		{"unknown client without PKCE", func(q url.Values) { q.Set("client_id", "cli_unknown"); noPKCE(q) }, "invalid_client"},
		{"unregistered redirect URI without PKCE", func(q url.Values) { q.Set("redirect_uri", "https://attacker.example/cb"); noPKCE(q) }, "invalid_request"},
		{"bad scope and bad resource", func(q url.Values) { q.Set("scope", "admin:all"); q.Set("resource", "https://elsewhere.example/mcp") }, "invalid_scope"},
		{"no PKCE and bad resource", func(q url.Values) { noPKCE(q); q.Set("resource", "https://elsewhere.example/mcp") }, "invalid_request"},
		{"oversized state without PKCE", func(q url.Values) { q.Set("state", strings.Repeat("s", 2049)); noPKCE(q) }, "invalid_request"},
		// The attack of RFC 9700 §4.11.2: a registered client whose
		// redirect is the attacker's, and a request that fails at once.
		{"attacker's client without PKCE", func(q url.Values) {
			q.Set("client_id", evil)
			q.Set("redirect_uri", "https://evil.example/cb")
			noPKCE(q)
		}, "invalid_request"},
		{"attacker's client with a bad scope", func(q url.Values) {
			q.Set("client_id", evil)
			q.Set("redirect_uri", "https://evil.example/cb")
			q.Set("scope", "admin:all")
		}, "invalid_scope"},
		{"attacker's client, form_post", func(q url.Values) {
			q.Set("client_id", evil)
			q.Set("redirect_uri", "https://evil.example/cb")
			q.Set("response_mode", "form_post")
		}, "unsupported_response_mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := h.newAuthz()
			tc.edit(a.params)
			b := newBrowser(t)
			resp, err := b.c.Get(h.gw.URL + "/oauth/authorize?" + a.params.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode/100 != 4 || resp.Header.Get("Location") != "" || resp.Request.URL.Host != strings.TrimPrefix(h.gw.URL, "http://") {
				t.Fatalf("got %d Location %q at %s, want an error page on the gateway", resp.StatusCode, resp.Header.Get("Location"), resp.Request.URL)
			}
			if !strings.Contains(body, "not valid") || !strings.Contains(body, "Error code: <code>"+tc.code+"</code>") {
				t.Fatalf("the page does not show error code %s:\n%s", tc.code, body)
			}
			if strings.Contains(body, "evil.example") || strings.Contains(body, "<script") || strings.Contains(body, "<form") {
				t.Fatalf("the page links, scripts or posts:\n%s", body)
			}
			u, _ := url.Parse(h.gw.URL)
			if len(b.c.Jar.Cookies(u)) != 0 {
				t.Fatal("a refused request started a login session")
			}
		})
	}
}

// TestErrorsBeforeConsentArePages: after the sign-in but before the
// consent page, errors are pages too (the identity provider's error, a
// client deleted in between); the user's answer on the consent page is
// what goes back to the client (TestRefusals "deny").
func TestErrorsBeforeConsentArePages(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	t.Run("the identity provider answers with an error", func(t *testing.T) {
		b := newBrowser(t)
		h.start(t, b, h.newAuthz())
		ls := h.loginSession(t, b)
		p := b.get(t, h.gw.URL+"/oauth/callback?error=access_denied&state="+url.QueryEscape(ls.IdPState))
		if p.location != nil || p.status != http.StatusForbidden || !strings.Contains(p.body, "Error code: <code>access_denied</code>") {
			t.Fatalf("got %d to %v:\n%s", p.status, p.location, p.body)
		}
	})
	t.Run("the client is gone before the consent page", func(t *testing.T) {
		gone := h.register(t, map[string]any{"redirect_uris": []string{redirectURI}})["client_id"].(string)
		a := h.newAuthz()
		a.params.Set("client_id", gone)
		b := newBrowser(t)
		p := h.start(t, b, a)
		m := hiddenID.FindStringSubmatch(p.body)
		if m == nil {
			t.Fatalf("no login form: %d", p.status)
		}
		if err := h.st.DeleteClient(context.Background(), gone); err != nil {
			t.Fatal(err)
		}
		p = b.post(t, h.idp.Issuer()+"/login", url.Values{"id": {m[1]}, "username": {"alice"}, "password": {"alice-pw"}})
		if p.location != nil || p.status/100 != 4 || !strings.Contains(p.body, "Error code: <code>invalid_client</code>") {
			t.Fatalf("got %d to %v:\n%s", p.status, p.location, p.body)
		}
	})
}

// TestConsentShowsNamesVisibly: a client stored with a bidirectional
// override and a zero-width space in its name (a row from before the check
// at registration) and a project named likewise are shown on the consent
// page with those characters written out, never raw.
func TestConsentShowsNamesVisibly(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	c, err := h.st.RegisterClient(ctx, "Claude\u200b Code\u202e", []string{redirectURI})
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.st.CreateProject(ctx, "", "docs\u2066x")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddMember(ctx, p.ID, alice); err != nil {
		t.Fatal(err)
	}
	a := h.newAuthz()
	a.params.Set("client_id", c.ClientID)
	page := h.login(t, newBrowser(t), a, "alice", "alice-pw")
	for _, raw := range []string{"\u200b", "\u202e", "\u2066"} {
		if strings.Contains(page.body, raw) {
			t.Errorf("the consent page carries %U raw", []rune(raw)[0])
		}
	}
	for _, want := range []string{`<q>Claude\u200b Code\u202e</q>`, `docs\u2066x`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the consent page does not show %s:\n%s", want, page.body)
		}
	}
}
