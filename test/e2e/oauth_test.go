package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
)

// The OAuth browser test walks the whole flow the way an MCP client does,
// through the real binary: an unauthenticated MCP call gets 401 with the
// resource metadata URL; the client discovers the resource and
// authorization server metadata, registers, and sends the browser to
// /oauth/authorize; headless Chromium logs in at a real OpenID provider
// and answers the consent page (a screenshot is kept), whose answer is a
// 303 to the client's callback: Chromium holds a form post's redirects to
// the page's CSP form-action, so it arrives only because the consent page
// lists the callback's origin there (without it the browser stays on
// /oauth/consent and this test fails); the client trades
// the code for tokens and reads a document. Then refresh rotation works,
// reusing a rotated refresh token revokes the family, and /oauth/revoke
// makes the next MCP call 401.

const (
	idpClientID     = "agent-gateway"
	idpClientSecret = "idp-client-secret"
	alicePassword   = "alice-password"
)

// chromiumPath finds Debian's chromium; under CI=true its absence fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required in CI (apt-get install chromium)")
	}
	t.Skip("chromium not installed")
	return ""
}

// newBrowser starts headless Chromium with a fresh profile; the network is
// closed, so nothing in the background may try to reach out.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// mcpClient is the MCP client's side of the flow: plain HTTP and x/oauth2.
type mcpClient struct {
	endpoint string
	resource string
	oauth    *oauth2.Config
	revoke   string
	callback chan url.Values
	// canaries receive every code and token the flow obtains, so the
	// stack's scan fails the test if one appears in a log, a response or
	// the metrics.
	canaries *gatewaytest.Canaries
}

// discover makes the unauthenticated call and follows the metadata.
func discover(t *testing.T, endpoint string) *mcpClient {
	t.Helper()
	resp, err := http.Post(endpoint, "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || m == nil {
		t.Fatalf("unauthenticated call: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	getJSON(t, m[1], &prm)
	if prm.Resource != endpoint || len(prm.AuthorizationServers) != 1 {
		t.Fatalf("resource metadata %+v", prm)
	}
	var as struct {
		Issuer                string   `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		RevocationEndpoint    string   `json:"revocation_endpoint"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	}
	getJSON(t, prm.AuthorizationServers[0]+"/.well-known/oauth-authorization-server", &as)
	if as.Issuer != prm.AuthorizationServers[0] || len(as.CodeChallengeMethods) != 1 || as.CodeChallengeMethods[0] != "S256" {
		t.Fatalf("authorization server metadata %+v", as)
	}

	c := &mcpClient{endpoint: endpoint, resource: prm.Resource, revoke: as.RevocationEndpoint, callback: make(chan url.Values, 1)}
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case c.callback <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, "<!doctype html><title>done</title><p>You can close this window.</p>")
	}))
	t.Cleanup(cb.Close)

	reg, err := json.Marshal(map[string]any{
		"client_name": "e2e MCP client", "redirect_uris": []string{cb.URL + "/callback"},
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Post(as.RegistrationEndpoint, "application/json", strings.NewReader(string(reg)))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	decodeJSON(t, resp, http.StatusCreated, &client)
	c.oauth = &oauth2.Config{
		ClientID: client.ClientID, RedirectURL: cb.URL + "/callback", Scopes: prm.ScopesSupported,
		Endpoint: oauth2.Endpoint{AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
	}
	return c
}

// authorize runs the browser part and returns the tokens.
func (c *mcpClient) authorize(t *testing.T, browser context.Context, screenshot string) *oauth2.Token {
	t.Helper()
	verifier, state := oauth2.GenerateVerifier(), "st-"+randomHex(t)
	authURL := c.oauth.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", c.resource))
	err := chromedp.Do(browser,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "alice"),
		chromedp.SendKeys(chromedp.ID("password"), alicePassword),
		chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.ID("allow")),
	)
	if err != nil {
		t.Fatalf("login and consent page: %v", err)
	}
	if screenshot != "" {
		png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("consent page screenshot: %s", screenshot)
	}
	text, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "project-a") || !strings.Contains(text, "documents:read") || !strings.Contains(text, "e2e MCP client") {
		t.Fatalf("consent page text:\n%s", text)
	}
	if err := chromedp.Do(browser, chromedp.Click(chromedp.ID("allow"))); err != nil {
		t.Fatalf("allow: %v", err)
	}
	var q url.Values
	select {
	case q = <-c.callback:
	case <-time.After(30 * time.Second):
		loc, _ := chromedp.Run(browser, chromedp.Location())
		body, _ := chromedp.Run(browser, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("the client's redirect URI was never reached; the browser is at %s:\n%s", loc, body)
	}
	if q.Get("state") != state || q.Get("code") == "" {
		t.Fatalf("callback %v", q)
	}
	c.canaries.Add("an OAuth authorization code", q.Get("code"))
	tok, err := c.oauth.Exchange(context.Background(), q.Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", c.resource))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	// The client asked for every scope the resource metadata lists; the
	// token carries exactly those. Tokens themselves are never logged.
	c.canaries.Add("an OAuth access token", tok.AccessToken)
	c.canaries.Add("an OAuth refresh token", tok.RefreshToken)
	granted, _ := tok.Extra("scope").(string)
	if tok.RefreshToken == "" || !sameScopes(granted, c.oauth.Scopes) {
		t.Fatalf("token has refresh token %v and scope %q, want %v", tok.RefreshToken != "", granted, c.oauth.Scopes)
	}
	return tok
}

// refresh sends a refresh_token grant and returns the status and body.
func (c *mcpClient) refresh(t *testing.T, refreshToken string) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(c.oauth.Endpoint.TokenURL, url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {c.oauth.ClientID},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// mcpStatus is the HTTP status of one tools/list call with the bearer.
func (c *mcpClient) mcpStatus(t *testing.T, bearer string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestOAuthBrowserFlow(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		browser := newBrowser(t)
		idp, err := oidcprovider.Start(oidcprovider.Options{Users: []oidcprovider.User{
			{Subject: "alice", Username: "alice", Password: alicePassword, Email: "alice@example.test", Name: "Alice"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { idp.Close() })
		s := newDocStack(t, freshDB(t), stackOptions{env: map[string]string{
			"AGENT_GATEWAY_OIDC_ISSUER":        idp.Issuer(),
			"AGENT_GATEWAY_OIDC_CLIENT_ID":     idpClientID,
			"AGENT_GATEWAY_OIDC_CLIENT_SECRET": idpClientSecret,
		}})
		idp.AddClient(oidcprovider.Client{ID: idpClientID, Secret: idpClientSecret, RedirectURIs: []string{s.gw.URL + "/oauth/callback"}})

		c := discover(t, s.gw.URL+"/mcp/documents")
		c.canaries = s.canaries
		tok := c.authorize(t, browser, screenshotPath(t, "oauth-consent"))

		// The token reads a document.
		cs := gatewaytest.ConnectURL(t, c.endpoint, tok.AccessToken)
		out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Runtime]})
		if isErr || out["path"] != s.docs.Runtime || out["content"] == "" {
			t.Fatalf("git_document_get: %v", out)
		}

		// Rotation: a new pair; the new access token works.
		status, rotated := c.refresh(t, tok.RefreshToken)
		if status != http.StatusOK || rotated["refresh_token"] == tok.RefreshToken {
			t.Fatalf("refresh: %d %v", status, rotated)
		}
		c.canaries.Add("a rotated OAuth access token", rotated["access_token"].(string))
		c.canaries.Add("a rotated OAuth refresh token", rotated["refresh_token"].(string))
		if st := c.mcpStatus(t, rotated["access_token"].(string)); st != http.StatusOK {
			t.Fatalf("MCP call with the rotated token: %d", st)
		}
		// Reuse of the rotated refresh token revokes the family.
		if status, body := c.refresh(t, tok.RefreshToken); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Fatalf("refresh token reuse: %d %v", status, body)
		}
		for _, at := range []string{tok.AccessToken, rotated["access_token"].(string)} {
			if st := c.mcpStatus(t, at); st != http.StatusUnauthorized {
				t.Fatalf("MCP call after reuse: %d, want 401", st)
			}
		}
		if status, _ := c.refresh(t, rotated["refresh_token"].(string)); status != http.StatusBadRequest {
			t.Fatalf("the family's newest refresh token still works after reuse: %d", status)
		}

		// A second authorization (same consent, nothing new on the consent
		// page); revoking its access token makes the next MCP call 401.
		tok2 := c.authorize(t, browser, "")
		if st := c.mcpStatus(t, tok2.AccessToken); st != http.StatusOK {
			t.Fatalf("MCP call with the second token: %d", st)
		}
		resp, err := http.PostForm(c.revoke, url.Values{"token": {tok2.AccessToken}, "token_type_hint": {"access_token"}, "client_id": {c.oauth.ClientID}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
		if st := c.mcpStatus(t, tok2.AccessToken); st != http.StatusUnauthorized {
			t.Fatalf("MCP call after revocation: %d, want 401", st)
		}
		if strings.Contains(s.gw.Logs(), tok2.AccessToken) || strings.Contains(s.gw.Logs(), tok.RefreshToken) {
			t.Fatal("a token appears in the gateway's logs")
		}
	})
}

// screenshotPath is where a screenshot is kept: test/artifacts/ (ignored by
// git) at the module root, named after the test.
func screenshotPath(t *testing.T, name string) string {
	t.Helper()
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name+"-"+strings.ReplaceAll(t.Name(), "/", "-")+".png")
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	decodeJSON(t, resp, http.StatusOK, v)
}

func decodeJSON(t *testing.T, resp *http.Response, status int, v any) {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s: %d %s", resp.Request.URL, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v", resp.Request.URL, err)
	}
}

// sameScopes reports whether a space-separated scope string holds exactly
// the scopes of want, in any order.
func sameScopes(got string, want []string) bool {
	g := strings.Fields(got)
	slices.Sort(g)
	w := slices.Clone(want)
	slices.Sort(w)
	return slices.Equal(g, w)
}
