package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The honest OAuth client: registered once, signed in as alice through
// the gateway's /oauth/authorize and the identity provider, then making a
// token exchange (a refresh grant, which rotates the refresh token) as one
// of the legitimate calls.

const honestRedirect = "http://127.0.0.1:9/callback"

var (
	loginIDField   = regexp.MustCompile(`name="id" value="([^"]+)"`)
	consentCSRFTok = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	consentProject = regexp.MustCompile(`name="project" value="([^"]+)"`)
)

// tokenExchange is the honest client's refresh token, rotated by every
// exchange.
type tokenExchange struct {
	mu                sync.Mutex
	clientID, refresh string
}

// signIn registers a client and runs the authorization code flow with
// PKCE for alice, returning the exchange that holds her refresh token.
func signIn(base string) (*tokenExchange, error) {
	reg := `{"client_name":"abuse honest client","redirect_uris":["` + honestRedirect + `"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`
	var registered struct {
		ClientID string `json:"client_id"`
	}
	if err := postJSON(http.DefaultClient, base+"/oauth/register", "application/json", reg, &registered); err != nil || registered.ClientID == "" {
		return nil, fmt.Errorf("register the honest client: %v", err)
	}
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	params := url.Values{"response_type": {"code"}, "client_id": {registered.ClientID}, "redirect_uri": {honestRedirect},
		"scope": {"documents:read"}, "state": {"honest-state"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}, "resource": {base + "/mcp/documents"}}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), honestRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	page := func(resp *http.Response, err error) (*http.Response, string, error) {
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp, string(b), err
	}
	resp, body, err := page(browser.Get(base + "/oauth/authorize?" + params.Encode()))
	if err != nil {
		return nil, err
	}
	m := loginIDField.FindStringSubmatch(body)
	if m == nil {
		return nil, fmt.Errorf("authorize: no login form (%d)", resp.StatusCode)
	}
	login := resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/login"
	if _, body, err = page(browser.PostForm(login, url.Values{"id": {m[1]}, "username": {"alice"}, "password": {"alice-pw"}})); err != nil {
		return nil, err
	}
	csrf, project := consentCSRFTok.FindStringSubmatch(body), consentProject.FindStringSubmatch(body)
	if csrf == nil || project == nil {
		return nil, fmt.Errorf("login: no consent page")
	}
	resp, _, err = page(browser.PostForm(base+"/oauth/consent", url.Values{"csrf_token": {html.UnescapeString(csrf[1])}, "project": {project[1]}, "action": {"allow"}}))
	if err != nil {
		return nil, err
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return nil, fmt.Errorf("consent: no code in the redirect (%d)", resp.StatusCode)
	}
	x := &tokenExchange{clientID: registered.ClientID}
	var tok struct {
		Refresh string `json:"refresh_token"`
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {honestRedirect},
		"client_id": {registered.ClientID}, "code_verifier": {verifier}, "resource": {base + "/mcp/documents"}}
	if err := postJSON(http.DefaultClient, base+"/oauth/token", "application/x-www-form-urlencoded", form.Encode(), &tok); err != nil || tok.Refresh == "" {
		return nil, fmt.Errorf("token: %v", err)
	}
	x.refresh = tok.Refresh
	return x, nil
}

// exchange makes one refresh grant and says how it failed ("" for success).
func (x *tokenExchange) exchange(client *http.Client, base string) (time.Duration, string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {x.refresh}, "client_id": {x.clientID}}
	var tok struct {
		Refresh string `json:"refresh_token"`
	}
	start := time.Now()
	err := postJSON(client, base+"/oauth/token", "application/x-www-form-urlencoded", form.Encode(), &tok)
	elapsed := time.Since(start)
	if err != nil || tok.Refresh == "" {
		return elapsed, fmt.Sprintf("token exchange: %v", err)
	}
	x.refresh = tok.Refresh
	return elapsed, ""
}

// postJSON posts body and decodes a 200 answer into v.
func postJSON(client *http.Client, u, contentType, body string, v any) error {
	resp, err := client.Post(u, contentType, strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return json.Unmarshal(b, v)
}
