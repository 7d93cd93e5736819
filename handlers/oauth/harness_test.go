package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/oauth2"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
)

// The harness runs the authorization server in process against a real
// OpenID provider (test/oidcprovider) and a real store, and plays both the
// MCP client (registration, authorize URL, token requests) and the
// browser (a cookie-jar HTTP client that fills the provider's login form
// and the consent form). The browser test in test/e2e walks the same flow
// in headless Chromium through the real binary.

const (
	alice        = "alice-sub"
	bob          = "bob-sub"
	clientSecret = "gateway-secret"
	// redirectURI is the MCP client's loopback redirect; nothing listens
	// there: the browser stops at the redirect and the test reads it.
	redirectURI = "http://127.0.0.1:9/callback"
)

var testScopes = []oauth.Scope{
	{Name: "catalog:read", Description: "read instruction catalogs"},
	{Name: "documents:read", Description: "read allowlisted documents"},
}

type harness struct {
	st       store.Store
	idp      *oidcprovider.Provider
	gw       *httptest.Server
	as       *oauth.Server
	resource string
	projectA string // alice is a member
	projectB string // bob is a member, alice is not
	clientID string
}

type harnessOptions struct {
	codeTTL        time.Duration
	unconfigured   bool
	registrations  int
	authorizations int
	// totalRegistrations, totalAuthorizations: the gateway-wide rates.
	totalRegistrations, totalAuthorizations int
	// maxUnusedClients, maxLoginSessions: the row caps.
	maxUnusedClients, maxLoginSessions int
	refused                            func(endpoint, reason string)
	clientMetadata                     oauth.ClientMetadataConfig
	log                                *slog.Logger
	// wrapStore, if set, is what the authorization server is given
	// instead of the store itself (a counting store, say).
	wrapStore func(oauth.Store) oauth.Store
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	h := &harness{st: storetest.SQLite(t)}
	var handler http.Handler
	h.gw = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(h.gw.Close)
	idp, err := oidcprovider.Start(oidcprovider.Options{
		Users: []oidcprovider.User{
			{Subject: alice, Username: "alice", Password: "alice-pw", Email: "alice@example.test", Name: "Alice"},
			{Subject: bob, Username: "bob", Password: "bob-pw"},
			{Subject: "carol-sub", Username: "carol", Password: "carol-pw"},
		},
		Clients: []oidcprovider.Client{{ID: "gateway", Secret: clientSecret, RedirectURIs: []string{h.gw.URL + "/oauth/callback"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idp.Close() })
	h.idp = idp
	h.resource = h.gw.URL + "/mcp/documents"
	cfg := oauth.Config{
		Issuer: h.gw.URL, Resource: h.resource, Scopes: testScopes, Store: h.st, CodeTTL: o.codeTTL,
		RegistrationsPerMinute: o.registrations, AuthorizationsPerMinute: o.authorizations, Refused: o.refused,
		TotalRegistrationsPerMinute: o.totalRegistrations, TotalAuthorizationsPerMinute: o.totalAuthorizations,
		MaxUnusedClients: o.maxUnusedClients, MaxLoginSessions: o.maxLoginSessions,
		ClientMetadata: o.clientMetadata, Log: o.log, AppRedirectSchemes: oauth.DefaultAppRedirectSchemes,
	}
	if o.wrapStore != nil {
		cfg.Store = o.wrapStore(h.st)
	}
	if !o.unconfigured {
		cfg.IdentityProvider = oauth.NewIdentityProvider(oauth.IdentityProviderConfig{
			Issuer: idp.Issuer(), ClientID: "gateway", ClientSecret: clientSecret,
			Scopes: []string{"openid", "profile"}, RedirectURL: h.gw.URL + "/oauth/callback",
		})
	}
	h.as = oauth.New(cfg)
	r := chi.NewRouter()
	r.Get("/.well-known/oauth-authorization-server", h.as.Metadata)
	r.Mount("/oauth", h.as.Routes())
	handler = r

	ctx := context.Background()
	a := must(h.st.CreateProject(ctx, "", "project-a"))(t)
	b := must(h.st.CreateProject(ctx, "", "project-b"))(t)
	h.projectA, h.projectB = a.ID, b.ID
	if err := h.st.AddMember(ctx, a.ID, alice); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddMember(ctx, b.ID, bob); err != nil {
		t.Fatal(err)
	}
	if !o.unconfigured {
		h.clientID = h.register(t, map[string]any{"client_name": "Test Client", "redirect_uris": []string{redirectURI}})["client_id"].(string)
	}
	return h
}

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// register posts RFC 7591 metadata and returns the 201 answer.
func (h *harness) register(t *testing.T, md map[string]any) map[string]any {
	t.Helper()
	status, body := h.postJSON(t, "/oauth/register", md)
	if status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, body)
	}
	return body
}

func (h *harness) postJSON(t *testing.T, path string, v any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(v)
	resp, err := http.Post(h.gw.URL+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// authz is one authorization request of the MCP client.
type authz struct {
	verifier string
	state    string
	params   url.Values
}

// newAuthz returns a valid request: PKCE S256, the documents resource,
// documents:read.
func (h *harness) newAuthz() *authz {
	a := &authz{verifier: oauth2.GenerateVerifier(), state: "state-" + oauth2.GenerateVerifier()[:16]}
	sum := sha256.Sum256([]byte(a.verifier))
	a.params = url.Values{
		"response_type":         {"code"},
		"client_id":             {h.clientID},
		"redirect_uri":          {redirectURI},
		"scope":                 {"documents:read"},
		"state":                 {a.state},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"resource":              {h.resource},
	}
	return a
}

// browser is a user agent with cookies that stops at the MCP client's
// redirect URI.
type browser struct {
	c *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{c: &http.Client{
		Jar: jar,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), redirectURI) || req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}}
}

// page is a response as the browser saw it.
type page struct {
	status   int
	url      *url.URL
	location *url.URL // set when the browser stopped at the client redirect
	body     string
	// retryAfter is the answer's Retry-After.
	retryAfter string
}

func (b *browser) do(t *testing.T, req *http.Request) page {
	t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := page{status: resp.StatusCode, url: resp.Request.URL, body: string(body), retryAfter: resp.Header.Get("Retry-After")}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode/100 == 3 {
		p.location, _ = url.Parse(loc)
	}
	return p
}

func (b *browser) get(t *testing.T, u string) page {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(t, req)
}

func (b *browser) post(t *testing.T, u string, form url.Values, header ...string) page {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(t, req)
}

var (
	hiddenID  = regexp.MustCompile(`name="id" value="([^"]+)"`)
	csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
)

// start sends the browser to /oauth/authorize and returns the page it ends
// on (the provider's login form when all is well).
func (h *harness) start(t *testing.T, b *browser, a *authz) page {
	t.Helper()
	return b.get(t, h.gw.URL+"/oauth/authorize?"+a.params.Encode())
}

// login fills the provider's login form and returns the consent page.
func (h *harness) login(t *testing.T, b *browser, a *authz, username, password string) page {
	t.Helper()
	p := h.start(t, b, a)
	m := hiddenID.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("expected the provider's login form, got %d at %s:\n%s", p.status, p.url, p.body)
	}
	p = b.post(t, h.idp.Issuer()+"/login", url.Values{"id": {m[1]}, "username": {username}, "password": {password}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Authorize") {
		t.Fatalf("expected the consent page, got %d at %s:\n%s", p.status, p.url, p.body)
	}
	return p
}

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token on the consent page:\n%s", p.body)
	}
	return html.UnescapeString(m[1])
}

// consent answers the consent form.
func (h *harness) consent(t *testing.T, b *browser, form url.Values) page {
	t.Helper()
	return b.post(t, h.gw.URL+"/oauth/consent", form)
}

// code runs login and consent for alice on project A and returns the code.
func (h *harness) code(t *testing.T, a *authz) string {
	t.Helper()
	b := newBrowser(t)
	p := h.login(t, b, a, "alice", "alice-pw")
	p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}})
	return codeFrom(t, p, a)
}

// codeFrom checks that the browser was sent to the client with a code and
// the client's state, and returns the code.
func codeFrom(t *testing.T, p page, a *authz) string {
	t.Helper()
	if p.location == nil {
		t.Fatalf("expected a redirect to the client, got %d:\n%s", p.status, p.body)
	}
	q := p.location.Query()
	if q.Get("state") != a.state {
		t.Fatalf("state %q not echoed (got %q)", a.state, q.Get("state"))
	}
	if q.Get("code") == "" {
		t.Fatalf("no code in %s", p.location)
	}
	return q.Get("code")
}

// tokenAnswer is a token endpoint response.
type tokenAnswer struct {
	status int
	body   map[string]any
}

func (a tokenAnswer) str(k string) string { s, _ := a.body[k].(string); return s }

func (h *harness) tokenRequest(t *testing.T, form url.Values) tokenAnswer {
	t.Helper()
	return postForm(t, h.gw.URL+"/oauth/token", form)
}

// postForm posts a form to an OAuth endpoint and decodes its JSON answer.
func postForm(t *testing.T, u string, form url.Values) tokenAnswer {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return tokenAnswer{resp.StatusCode, body}
}

func (h *harness) exchange(t *testing.T, code, verifier string, extra ...string) tokenAnswer {
	t.Helper()
	form := url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"client_id": {h.clientID}, "code_verifier": {verifier}, "resource": {h.resource},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	return h.tokenRequest(t, form)
}

func (h *harness) refresh(t *testing.T, refreshToken string, extra ...string) tokenAnswer {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {h.clientID}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	return h.tokenRequest(t, form)
}

// valid reports whether the documents endpoint would accept the token.
func (h *harness) valid(t *testing.T, accessToken string) bool {
	t.Helper()
	_, err := h.st.LookupAccessToken(context.Background(), accessToken)
	return err == nil
}

// wantOAuthError checks an OAuth JSON error answer.
func wantOAuthError(t *testing.T, a tokenAnswer, status int, code string) {
	t.Helper()
	if a.status != status || a.str("error") != code {
		t.Fatalf("got %d %v, want %d error=%s", a.status, a.body, status, code)
	}
}
