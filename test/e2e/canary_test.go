package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
)

// Credential hygiene. Every e2e stack registers its secrets as canaries
// (gatewaytest.Canaries) and is scanned when its test ends: the gateway's
// logs, every MCP response its sessions read and its /metrics. These tests
// cover what the stacks alone do not: that the scan really sees tool
// errors, and the secrets of the OAuth token endpoint.

// TestCanaryScanSeesToolErrors is the scan's positive control: a secret a
// caller puts into a request and the gateway echoes back (an unknown
// member's name is quoted in invalid_arguments) is found in the recorded
// responses. The canary set used here is not the stack's, so the stack's
// own scan does not fail on this deliberate echo.
func TestCanaryScanSeesToolErrors(t *testing.T) {
	st := startForgejoStack(t, nil)
	echoed := gatewaytest.NewCanaryToken("echo")
	probe := &gatewaytest.Canaries{}
	probe.Add("a canary the caller sent", echoed)
	s := st.gw.Connect(t, "/mcp/forgejo", "")
	out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": "demo", "repo": "gateway", echoed: 1})
	if !isErr || errorCode(t, out) != "invalid_arguments" {
		t.Fatalf("got %v", out)
	}
	if found := probe.Find(st.gw.Responses()); len(found) == 0 {
		t.Fatal("the recorded responses lack a tool error the client received")
	}
}

// TestCanaryOAuthTokens: the gateway's own OAuth secrets never appear in
// its outputs. An authorization through the live path (registration,
// authorize, login, consent, /oauth/token) yields a code, an access token
// and a refresh token; the refresh token presented as a bearer is refused
// as invalid_token, the access token reads, and none of the three reaches
// a log, a response or /metrics (the stack's canary scan).
func TestCanaryOAuthTokens(t *testing.T) {
	idp := startIdP(t)
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{env: oidcEnv(idp, nil)})
	idp.AddClient(oidcprovider.Client{ID: idpClientID, Secret: idpClientSecret, RedirectURIs: []string{s.gw.URL + "/oauth/callback"}})
	consent := s.admin(t, "create-consent", "--project-id", s.projectA, "--subject", "alice", "--scopes", "documents:read")
	s.canaries.Add("the admin CLI's access token", consent["access_token"].(string))
	status, clientID := registerClient(t, s.gw.URL, nil)
	if status != http.StatusCreated {
		t.Fatalf("register: %d", status)
	}
	code, verifier := headlessCode(t, s.gw.URL, clientID)
	s.canaries.Add("an authorization code", code)
	status, tok := tokenGrant(t, s.gw.URL, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {headlessRedirect},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {s.gw.URL + "/mcp/documents"},
	})
	access, _ := tok["access_token"].(string)
	refresh, _ := tok["refresh_token"].(string)
	if status != http.StatusOK || access == "" || refresh == "" {
		t.Fatalf("token: %d %v", status, tok)
	}
	s.canaries.Add("a refresh token", refresh)
	s.canaries.Add("an access token from /oauth/token", access)
	endpoint := s.gw.URL + "/mcp/documents"
	resp, body := rawCall(t, endpoint, refresh, "runtime_bootstrap_get", map[string]any{})
	s.gw.Record(body)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("a refresh token as a bearer: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	resp, body = rawCall(t, endpoint, access, "runtime_bootstrap_get", map[string]any{})
	s.gw.Record(body)
	if resp.StatusCode != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("the access token: %d %s", resp.StatusCode, body)
	}
	cs := s.session(t, access)
	if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); isErr {
		t.Fatalf("read with the access token: %v", out)
	}
	// A second use of the code is refused and revokes what it issued.
	status, again := tokenGrant(t, s.gw.URL, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {headlessRedirect},
		"client_id": {clientID}, "code_verifier": {verifier},
	})
	s.gw.Record(mustJSON(t, again))
	if status != http.StatusBadRequest || again["error"] != "invalid_grant" {
		t.Fatalf("replayed code: %d %v", status, again)
	}
	if resp, _ := rawCall(t, endpoint, access, "runtime_bootstrap_get", map[string]any{}); resp.StatusCode != 401 {
		t.Fatalf("the access token after a replayed code: %d, want 401", resp.StatusCode)
	}
}
