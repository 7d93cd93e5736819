package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// The second attacker run against the authorization server, through the
// binary: no open redirect at /oauth/authorize, no dangerous redirect
// scheme at registration, client names shown as what they are.

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

// TestOAuthRedirectSchemes: registration refuses the schemes operating
// systems run (ms-msdt:, search-ms:) and single-label schemes nobody
// listed, and hosts that are neither DNS names nor IP literals ("a;b"),
// and accepts https, loopback http, reverse-DNS schemes and the
// listed IDE schemes; oauth.app_redirect_schemes replaces the list, and
// --config-test refuses listing a scheme that is never allowed.
func TestOAuthRedirectSchemes(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	for _, tc := range []struct {
		uri    string
		status int
	}{
		{"ms-msdt:/id%20PCWDiagnostic%20/skip%20force", http.StatusBadRequest},
		{"ms-msdt://x/y", http.StatusBadRequest},
		{"search-ms:/query=invoice&crumb=location:\\\\evil.example\\share", http.StatusBadRequest},
		{"vnd.sun.star.script:/Standard.Module1.Main", http.StatusBadRequest},
		{"myapp://cb/x", http.StatusBadRequest},
		{"windsurf://codeium/cb", http.StatusBadRequest},
		// A host must be a DNS name or an IP literal.
		{"https://a;b/cb", http.StatusBadRequest},
		{"https://a'b/cb", http.StatusBadRequest},
		{"https://a,b/cb", http.StatusBadRequest},
		{"cursor://anysphere;x/oauth/callback", http.StatusBadRequest},
		{"cursor://anysphere.cursor-mcp/oauth/callback", http.StatusCreated},
		{"vscode://vscode.github-authentication/did-authenticate", http.StatusCreated},
		{"com.example.app:/oauth2redirect", http.StatusCreated},
		{"https://vscode.dev/redirect", http.StatusCreated},
		{"http://127.0.0.1:33418/", http.StatusCreated},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			status, body := registerJSON(t, o.gw.URL, map[string]any{"redirect_uris": []string{tc.uri}})
			if status != tc.status || tc.status == http.StatusBadRequest && body["error"] != "invalid_redirect_uri" {
				t.Fatalf("register %s: %d %v, want %d", tc.uri, status, body, tc.status)
			}
		})
	}

	listed := startOAuthGateway(t, storetest.SQLiteURL(t), map[string]string{"AGENT_GATEWAY_OAUTH_APP_REDIRECT_SCHEMES": "windsurf"})
	if status, body := registerJSON(t, listed.gw.URL, map[string]any{"redirect_uris": []string{"windsurf://codeium/cb"}}); status != http.StatusCreated {
		t.Fatalf("a listed scheme: %d %v", status, body)
	}
	if status, body := registerJSON(t, listed.gw.URL, map[string]any{"redirect_uris": []string{"cursor://anysphere.cursor-mcp/oauth/callback"}}); status != http.StatusBadRequest {
		t.Fatalf("a scheme the operator's list leaves out: %d %v", status, body)
	}

	for _, v := range []string{"ms-msdt", "cursor,search-ms", "javascript"} {
		code, out, errs := configTestWith(t, []string{"AGENT_GATEWAY_OAUTH_APP_REDIRECT_SCHEMES=" + v}, "serve", "--config-test")
		if code != 2 || !strings.Contains(errs, "oauth.app_redirect_schemes (AGENT_GATEWAY_OAUTH_APP_REDIRECT_SCHEMES)") || strings.Contains(out, "configuration OK") {
			t.Fatalf("--config-test with %s: exit %d\n%s%s", v, code, out, errs)
		}
	}
}

// TestOAuthNamesShownVisibly: registration refuses a client name with a
// right-to-left override or a zero-width space; a client stored with one
// before that check is shown with the characters written out, in admin
// list-clients (text and --json) and on the consent page.
func TestOAuthNamesShownVisibly(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	for _, name := range []string{"Claude Code\u202e", "Claude\u200bCode", "a\u2066b", "\ufeffCursor"} {
		status, body := registerJSON(t, o.gw.URL, map[string]any{"client_name": name, "redirect_uris": []string{headlessRedirect}})
		if status != http.StatusBadRequest || body["error"] != "invalid_client_metadata" {
			t.Fatalf("register %q: %d %v", name, status, body)
		}
	}
	const stored = "Claude\u200b Code\u202eexe.txt"
	c, err := o.openStore(t).RegisterClient(context.Background(), stored, []string{headlessRedirect})
	if err != nil {
		t.Fatal(err)
	}
	const shown = `Claude\u200b Code\u202eexe.txt`
	raw := func(t *testing.T, where, text string) {
		t.Helper()
		if strings.ContainsAny(text, "\u200b\u202e") {
			t.Errorf("%s carries the name's invisible characters raw:\n%s", where, text)
		}
	}

	code, text, errs := runCommand(t, o.adminCmd(t, "list-clients"))
	if code != 0 || !strings.Contains(text, shown) {
		t.Fatalf("admin list-clients: exit %d, want %s in:\n%s%s", code, shown, text, errs)
	}
	raw(t, "admin list-clients", text)
	code, js, errs := o.runAdmin(t, "list-clients")
	if code != 0 || !strings.Contains(js, `\u200b`) || !strings.Contains(js, `\u202e`) {
		t.Fatalf("admin list-clients --json: exit %d:\n%s%s", code, js, errs)
	}
	raw(t, "admin list-clients --json", js)
	var list []map[string]any
	if err := json.Unmarshal([]byte(js), &list); err != nil || !hasClientName(list, stored) {
		t.Fatalf("--json does not decode to the stored name: %v %v", list, err)
	}

	params, _ := authzParams(o.gw.URL, c.ClientID)
	_, _, page := consentPage(t, o.gw.URL, params)
	if !strings.Contains(page, "<q>"+shown+"</q>") {
		t.Fatalf("the consent page does not show %s:\n%s", shown, page)
	}
	raw(t, "the consent page", page)
}

// hasClientName reports whether a listed record has client_name name.
func hasClientName(list []map[string]any, name string) bool {
	for _, rec := range list {
		if rec["client_name"] == name {
			return true
		}
	}
	return false
}
