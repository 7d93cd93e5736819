package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
)

// A headless MCP client and browser for the OAuth tests that do not need
// Chromium (TestOAuthBrowserFlow walks the same pages in a real browser):
// registration, /oauth/authorize, the identity provider's login form and
// the consent form with a cookie-jar HTTP client, then /oauth/token.

// headlessRedirect is the MCP client's loopback redirect URI; nothing
// listens there: the browser stops at the redirect and the test reads it.
const headlessRedirect = "http://127.0.0.1:9/callback"

// startIdP starts the test identity provider with alice.
func startIdP(t *testing.T) *oidcprovider.Provider {
	t.Helper()
	idp, err := oidcprovider.Start(oidcprovider.Options{Users: []oidcprovider.User{
		{Subject: "alice", Username: "alice", Password: alicePassword, Email: "alice@example.test", Name: "Alice"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idp.Close() })
	return idp
}

// oidcEnv configures a gateway to log users in at idp.
func oidcEnv(idp *oidcprovider.Provider, extra map[string]string) map[string]string {
	env := map[string]string{
		"AGENT_GATEWAY_OIDC_ISSUER":        idp.Issuer(),
		"AGENT_GATEWAY_OIDC_CLIENT_ID":     idpClientID,
		"AGENT_GATEWAY_OIDC_CLIENT_SECRET": idpClientSecret,
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// registerClient registers an MCP client at a gateway and returns its ID;
// headers (e.g. X-Forwarded-For) go with the request.
func registerClient(t *testing.T, gwURL string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, gwURL+"/oauth/register",
		strings.NewReader(`{"client_name":"headless","redirect_uris":["`+headlessRedirect+`"]}`))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
	return resp.StatusCode, body.ClientID
}

// authzParams is a valid authorization request of clientID at gwURL.
func authzParams(gwURL, clientID string) (url.Values, string) {
	verifier := oauth2.GenerateVerifier()
	sum := sha256.Sum256([]byte(verifier))
	return url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {headlessRedirect},
		"scope": {"documents:read"}, "state": {"st-" + verifier[:12]},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {gwURL + "/mcp/documents"},
	}, verifier
}

// noFollow is an HTTP client that returns every redirect to the caller.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

var (
	loginID     = regexp.MustCompile(`name="id" value="([^"]+)"`)
	consentCSRF = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	projectOpt  = regexp.MustCompile(`name="project" value="([^"]+)"`)
)

// headlessCode logs alice in at idp through gwURL's /oauth/authorize,
// allows the consent for her first project and returns the code and its
// PKCE verifier.
func headlessCode(t *testing.T, gwURL, clientID string) (string, string) {
	t.Helper()
	params, verifier := authzParams(gwURL, clientID)
	// The answer to the consent form is a plain 303 to the client.
	_, resp := consentAnswer(t, gwURL, params)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent: want 303 to the client, got %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" || loc.Query().Get("state") != params.Get("state") {
		t.Fatalf("consent: redirect to %q", resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), verifier
}

// tokenGrant posts to /oauth/token and returns the status and answer.
func tokenGrant(t *testing.T, gwURL string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(gwURL+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
	return resp.StatusCode, body
}

// headlessTokens runs the whole authorization of clientID at gwURL and
// returns the access and refresh tokens.
func headlessTokens(t *testing.T, gwURL, clientID string) (string, string) {
	t.Helper()
	code, verifier := headlessCode(t, gwURL, clientID)
	status, body := tokenGrant(t, gwURL, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {headlessRedirect},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {gwURL + "/mcp/documents"},
	})
	access, _ := body["access_token"].(string)
	refresh, _ := body["refresh_token"].(string)
	if status != http.StatusOK || access == "" || refresh == "" {
		t.Fatalf("token: %d %v", status, body)
	}
	return access, refresh
}
