package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// OAuth interoperability through the real binary: what a spec-following MCP
// client (the official TypeScript SDK, an IDE with a private-use redirect)
// does must complete. TestOAuthTypeScriptClient walks the same with the SDK
// itself.

// nativeRedirect is Cursor's private-use scheme redirect URI
// (RFC 8252 §7.1), as its documentation gives it.
const nativeRedirect = "cursor://anysphere.cursor-mcp/oauth/callback"

// consentAnswer logs alice in for the authorization request params and
// answers the consent page with Allow; it returns the consent page's CSP
// and the answer (not followed).
func consentAnswer(t *testing.T, gwURL string, params url.Values) (string, *http.Response) {
	t.Helper()
	browser, resp, body := consentPage(t, gwURL, params)
	csrf, project := consentCSRF.FindStringSubmatch(body), projectOpt.FindStringSubmatch(body)
	if csrf == nil || project == nil {
		t.Fatalf("login: want the consent page, got %d at %s:\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	resp, err := browser.PostForm(gwURL+"/oauth/consent", url.Values{
		"csrf_token": {html.UnescapeString(csrf[1])}, "project": {project[1]}, "action": {"allow"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return csp, resp
}

// consentPage logs alice in for the authorization request params and
// returns her browser (stopping at the client's redirect), the consent
// page's response and its body.
func consentPage(t *testing.T, gwURL string, params url.Values) (*http.Client, *http.Response, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), headlessRedirect) || req.URL.Scheme != "http" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	read := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp, string(b)
	}
	resp, body := read(browser.Get(gwURL + "/oauth/authorize?" + params.Encode()))
	m := loginID.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("authorize: want the provider's login form, got %d at %s:\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	loginURL := resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/login"
	resp, body = read(browser.PostForm(loginURL, url.Values{"id": {m[1]}, "username": {"alice"}, "password": {alicePassword}}))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: want the consent page, got %d at %s:\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	return browser, resp, body
}

// bearerCall posts one JSON-RPC message to the documents endpoint.
func bearerCall(t *testing.T, endpoint, bearer, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp
}

const toolsList = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// TestOAuthInterop: the scope hint in the 401; a
// private-use redirect registered and authorized without state or
// resource, consent a plain 303 with the redirect's scheme in the consent
// page's form-action; a loopback client with a one-character state and a
// trailing-slash resource; a narrowing refresh that the scope gate
// enforces, retiring the older access token; revocation by another client
// refused, by the owner done.
func TestOAuthInterop(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	endpoint := o.gw.URL + "/mcp/documents"

	// 1: the challenge names the scopes to ask for: every one the
	// endpoint's tools check.
	resp := bearerCall(t, endpoint, "", toolsList)
	if wa := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(wa, `scope="catalog:read documents:read workflow:dispatch"`) {
		t.Fatalf("unauthenticated: %d %q", resp.StatusCode, wa)
	}
	var as struct {
		Scopes []string `json:"scopes_supported"`
		CIMD   *bool    `json:"client_id_metadata_document_supported"`
	}
	getJSON(t, o.gw.URL+"/.well-known/oauth-authorization-server", &as)
	if as.CIMD != nil {
		t.Fatal("client metadata documents are advertised while oauth.client_metadata_hosts is empty")
	}
	other := ""
	for _, s := range as.Scopes {
		if s != "documents:read" {
			other = s
		}
	}
	if other == "" {
		t.Fatalf("want a second scope to narrow to, metadata lists %v", as.Scopes)
	}

	// 4: a private-use redirect registers; a browser-run scheme does not.
	if status, body := registerClientURI(t, o.gw.URL, "javascript://x/%0aalert(1)"); status != http.StatusBadRequest {
		t.Fatalf("javascript redirect registered: %d %s", status, body)
	}
	// Cursor's registration, as reported: its private-use URI, a hosted
	// https callback and a loopback one, in one request.
	regBody, _ := json.Marshal(map[string]any{"client_name": "Cursor", "redirect_uris": []string{
		nativeRedirect, "https://www.cursor.com/agents/mcp/oauth/callback", "http://localhost:8787/callback"}})
	regResp, err := http.Post(o.gw.URL+"/oauth/register", "application/json", strings.NewReader(string(regBody)))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	decodeJSON(t, regResp, http.StatusCreated, &reg)

	// 2, 3, 5: no state, no resource; consent is a 303 to the app.
	verifier := oauth2.GenerateVerifier()
	sum := sha256.Sum256([]byte(verifier))
	params := url.Values{
		"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {nativeRedirect},
		"scope":          {"documents:read " + other},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
	}
	csp, resp := consentAnswer(t, o.gw.URL, params)
	if !strings.Contains(csp, "form-action 'self' cursor:;") {
		t.Errorf("consent page CSP %q does not allow the app's scheme", csp)
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.String(), nativeRedirect+"?") ||
		loc.Query().Get("code") == "" || loc.Query().Has("state") {
		t.Fatalf("consent: %d Location %q, want a 303 to the app with a code and no state", resp.StatusCode, resp.Header.Get("Location"))
	}
	o.canaries.Add("an OAuth authorization code", loc.Query().Get("code"))
	st, tok := tokenGrant(t, o.gw.URL, url.Values{
		"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {nativeRedirect},
		"client_id": {reg.ClientID}, "code_verifier": {verifier},
	})
	access, refresh := str(tok["access_token"]), str(tok["refresh_token"])
	if st != http.StatusOK || access == "" || !sameScopes(str(tok["scope"]), []string{"documents:read", other}) {
		t.Fatalf("token: %d %v", st, tok)
	}
	o.canaries.Add("an OAuth access token", access)
	o.canaries.Add("an OAuth refresh token", refresh)
	if r := bearerCall(t, endpoint, access, toolsList); r.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d", r.StatusCode)
	}

	// 6, 7: a refresh narrowed to the other scope; the scope gate holds
	// the narrowed token to it, and the older access token is retired.
	st, narrowed := tokenGrant(t, o.gw.URL, url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {reg.ClientID}, "scope": {other},
	})
	if st != http.StatusOK || str(narrowed["scope"]) != other {
		t.Fatalf("narrowing refresh: %d %v", st, narrowed)
	}
	o.canaries.Add("a narrowed OAuth access token", str(narrowed["access_token"]))
	o.canaries.Add("a rotated OAuth refresh token", str(narrowed["refresh_token"]))
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"git_document_get","arguments":{"source_id":"src_x"}}}`
	if r := bearerCall(t, endpoint, str(narrowed["access_token"]), call); r.StatusCode != http.StatusForbidden ||
		!strings.Contains(r.Header.Get("WWW-Authenticate"), "insufficient_scope") {
		t.Fatalf("documents call with a token narrowed to %s: %d %q", other, r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	if r := bearerCall(t, endpoint, access, toolsList); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the access token issued before the refresh: %d, want 401", r.StatusCode)
	}
	st, widened := tokenGrant(t, o.gw.URL, url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {str(narrowed["refresh_token"])}, "client_id": {reg.ClientID},
		"scope": {"documents:read " + other + " admin:all"},
	})
	if st != http.StatusBadRequest || widened["error"] != "invalid_scope" {
		t.Fatalf("widening refresh: %d %v", st, widened)
	}
	st, full := tokenGrant(t, o.gw.URL, url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {str(narrowed["refresh_token"])}, "client_id": {reg.ClientID},
	})
	if st != http.StatusOK || !sameScopes(str(full["scope"]), []string{"documents:read", other}) {
		t.Fatalf("refresh after the narrowing: %d %v", st, full)
	}
	o.canaries.Add("a rotated OAuth access token", str(full["access_token"]))
	o.canaries.Add("a rotated OAuth refresh token", str(full["refresh_token"]))

	// 8: revocation by another client is refused; by the owner it ends
	// the authorization.
	_, otherClient := registerClient(t, o.gw.URL, nil)
	revoke := func(client string) (int, string) {
		resp, err := http.PostForm(o.gw.URL+"/oauth/revoke", url.Values{"token": {str(full["access_token"])}, "client_id": {client}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	if st, b := revoke(otherClient); st != http.StatusBadRequest || !strings.Contains(b, `"unauthorized_client"`) {
		t.Fatalf("revocation by another client: %d %s", st, b)
	}
	if r := bearerCall(t, endpoint, str(full["access_token"]), toolsList); r.StatusCode != http.StatusOK {
		t.Fatalf("the token after a refused revocation: %d", r.StatusCode)
	}
	if st, b := revoke(reg.ClientID); st != http.StatusOK {
		t.Fatalf("revocation by the owner: %d %s", st, b)
	}
	if r := bearerCall(t, endpoint, str(full["access_token"]), toolsList); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the token after revocation: %d", r.StatusCode)
	}

	// 2, 3, 5 for a loopback client: a one-character state comes back,
	// a trailing-slash resource is the documents endpoint, and the consent
	// page allows the loopback origin.
	_, loopback := registerClient(t, o.gw.URL, nil)
	params, verifier = authzParams(o.gw.URL, loopback)
	params.Set("state", "x")
	params.Set("resource", endpoint+"/")
	csp, resp = consentAnswer(t, o.gw.URL, params)
	if !strings.Contains(csp, "form-action 'self' http://127.0.0.1:9;") {
		t.Errorf("consent page CSP %q does not allow the loopback origin", csp)
	}
	loc, _ = url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || !slices.Equal(loc.Query()["state"], []string{"x"}) {
		t.Fatalf("consent: %d Location %q, want a 303 with state=x", resp.StatusCode, resp.Header.Get("Location"))
	}
	o.canaries.Add("an OAuth authorization code", loc.Query().Get("code"))
	st, tok = tokenGrant(t, o.gw.URL, url.Values{
		"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {headlessRedirect},
		"client_id": {loopback}, "code_verifier": {verifier}, "resource": {endpoint + "/"},
	})
	if st != http.StatusOK {
		t.Fatalf("token with a trailing-slash resource: %d %v", st, tok)
	}
	o.canaries.Add("an OAuth access token", str(tok["access_token"]))
	o.canaries.Add("an OAuth refresh token", str(tok["refresh_token"]))
}

func str(v any) string { s, _ := v.(string); return s }

// TestOAuthClientMetadataDocument through the binary: a
// client whose client_id is the https URL of its metadata document, served
// by a loopback TLS server the gateway trusts (SSL_CERT_FILE) and may reach
// (oauth.client_metadata_allow_loopback), authorizes without registering
// and reads tools; a redirect URI the document does not list is refused on
// a page; a host not on oauth.client_metadata_hosts is refused without a
// fetch. Off by default: TestOAuthInterop's gateway does not advertise it.
func TestOAuthClientMetadataDocument(t *testing.T) {
	var fetches atomic.Int32
	var docURL string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Metadata Client","redirect_uris":[%q]}`, docURL, headlessRedirect)
	}))
	t.Cleanup(srv.Close)
	docURL = srv.URL + "/oauth/client.json"
	o := startOAuthGateway(t, storetest.SQLiteURL(t), clientMetadataEnv(t, srv))
	var md map[string]any
	getJSON(t, o.gw.URL+"/.well-known/oauth-authorization-server", &md)
	if md["client_id_metadata_document_supported"] != true {
		t.Fatalf("metadata: %v", md)
	}

	params, verifier := authzParams(o.gw.URL, docURL)
	_, resp := consentAnswer(t, o.gw.URL, params)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	o.canaries.Add("an OAuth authorization code", loc.Query().Get("code"))
	st, tok := tokenGrant(t, o.gw.URL, url.Values{
		"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {headlessRedirect},
		"client_id": {docURL}, "code_verifier": {verifier},
	})
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tok)
	}
	o.canaries.Add("an OAuth access token", str(tok["access_token"]))
	o.canaries.Add("an OAuth refresh token", str(tok["refresh_token"]))
	if r := bearerCall(t, o.gw.URL+"/mcp/documents", str(tok["access_token"]), toolsList); r.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d", r.StatusCode)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the document was fetched %d times in one authorization, want 1 (cached per max-age)", n)
	}

	for _, tc := range []struct{ name, clientID, redirect, want string }{
		{"redirect URI not in the document", docURL, "http://127.0.0.1:9/elsewhere", "not valid"},
		{"host not allowlisted", strings.Replace(docURL, "127.0.0.1", "localhost", 1), headlessRedirect, "The client metadata document could not be used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fetches.Load()
			params, _ := authzParams(o.gw.URL, tc.clientID)
			params.Set("redirect_uri", tc.redirect)
			resp, body := authorizeResponse(t, http.MethodGet, o.gw.URL, params, nil)
			if resp.StatusCode/100 != 4 || resp.Header.Get("Location") != "" || loginCookie(resp) != "" || !strings.Contains(body, tc.want) {
				t.Fatalf("%d Location %q:\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
			}
			if tc.name == "host not allowlisted" && fetches.Load() != before {
				t.Fatal("a host off the allowlist was fetched")
			}
		})
	}
}
