package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// The second attacker run against the authorization server, through the
// binary: no open redirect at /oauth/authorize, no dangerous redirect
// scheme at registration.

// registerJSON posts RFC 7591 metadata and returns the status and the
// decoded answer.
func registerJSON(t *testing.T, gwURL string, md map[string]any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(md)
	resp, err := http.Post(gwURL+"/oauth/register", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = json.Unmarshal(body, &out)
	return resp.StatusCode, out
}

// TestOAuthNoOpenRedirect: anyone can register a client whose redirect is
// theirs; an authorization request of it that fails before the user signs
// in (no PKCE, a bad scope, form_post) is an error page on the gateway
// with the error code, not a 303 to that redirect, and starts no login.
func TestOAuthNoOpenRedirect(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	const evil = "https://evil.example/landing"
	status, reg := registerJSON(t, o.gw.URL, map[string]any{"client_name": "Evil", "redirect_uris": []string{evil}})
	if status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, reg)
	}
	clientID := str(reg["client_id"])
	for _, tc := range []struct {
		name, param, value, code string
	}{
		{"without PKCE", "code_challenge", "", "invalid_request"},
		{"with plain PKCE", "code_challenge_method", "plain", "invalid_request"},
		{"with an unknown scope", "scope", "admin:all", "invalid_scope"},
		{"with another resource", "resource", "https://elsewhere.example/mcp", "invalid_target"},
		{"with form_post", "response_mode", "form_post", "unsupported_response_mode"},
		{"with an implicit response type", "response_type", "token", "unsupported_response_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params, _ := authzParams(o.gw.URL, clientID)
			params.Set("redirect_uri", evil)
			if tc.value == "" {
				params.Del(tc.param)
			} else {
				params.Set(tc.param, tc.value)
			}
			resp, body := authorizeResponse(t, http.MethodGet, o.gw.URL, params, nil)
			if resp.StatusCode/100 != 4 || resp.Header.Get("Location") != "" || loginCookie(resp) != "" {
				t.Fatalf("%d Location %q, want an error page and no login", resp.StatusCode, resp.Header.Get("Location"))
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "Error code: <code>"+tc.code+"</code>") ||
				strings.Contains(body, "evil.example") {
				t.Fatalf("the page does not show %s, or names the redirect:\n%s", tc.code, body)
			}
		})
	}
}
