package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agent-gateway/agent-gateway/store"
)

// loginSession returns the browser's login session as stored.
func (h *harness) loginSession(t *testing.T, b *browser) store.LoginSession {
	t.Helper()
	u, _ := url.Parse(h.gw.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "agw_login" {
			ls, err := h.st.GetLoginSession(context.Background(), store.HashToken(c.Value))
			if err != nil {
				t.Fatal(err)
			}
			return ls
		}
	}
	t.Fatal("no login session cookie")
	return store.LoginSession{}
}

// TestAuthorizeBounds: /oauth/authorize keeps only the parameters it
// reads, each bounded; refuses userinfo in the redirect URI (as
// registration does) and any response mode but query, on a page; and
// every answer carries a CSP without script.
func TestAuthorizeBounds(t *testing.T) {
	var mu sync.Mutex
	refusals := map[string]int{}
	h := newHarness(t, harnessOptions{refused: func(endpoint, reason string) {
		mu.Lock()
		refusals[endpoint+"/"+reason]++
		mu.Unlock()
	}})

	t.Run("unknown parameters are not stored", func(t *testing.T) {
		b := newBrowser(t)
		a := h.newAuthz()
		for i := 0; i < 20; i++ {
			a.params.Set("junk"+strings.Repeat("k", i), strings.Repeat("x", 700))
		}
		a.params.Set("response_mode", "query")
		if p := h.start(t, b, a); p.status != http.StatusOK || !strings.Contains(p.body, "Sign in") {
			t.Fatalf("want the provider's login form, got %d", p.status)
		}
		q := h.loginSession(t, b).AuthorizeQuery
		if strings.Contains(q, "junk") || strings.Contains(q, "response_mode") || len(q) > 1024 {
			t.Fatalf("stored authorization request (%d bytes): %s", len(q), q)
		}
	})
	for _, tc := range []struct{ name, param, value string }{
		{"redirect URI with userinfo", "redirect_uri", "http://evil@127.0.0.1:9999/callback"},
		{"redirect URI with userinfo and the registered port", "redirect_uri", "http://evil@127.0.0.1:9/callback"},
		{"oversized client_id", "client_id", strings.Repeat("c", 1025)},
		{"oversized redirect URI", "redirect_uri", "http://127.0.0.1:9/callback?" + strings.Repeat("p", 2048)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := h.newAuthz()
			a.params.Set(tc.param, tc.value)
			b := newBrowser(t)
			p := h.start(t, b, a)
			if p.location != nil || p.status != http.StatusBadRequest || !strings.Contains(p.body, "not valid") {
				t.Fatalf("want an error page and no redirect, got %d to %v", p.status, p.location)
			}
			u, _ := url.Parse(h.gw.URL)
			if len(b.c.Jar.Cookies(u)) != 0 {
				t.Fatal("a refused request started a login session")
			}
		})
	}
	t.Run("form_post is refused on a page, without script", func(t *testing.T) {
		a := h.newAuthz()
		a.params.Set("response_mode", "form_post")
		resp, err := newBrowser(t).c.Get(h.gw.URL + "/oauth/authorize?" + a.params.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(body, "unsupported_response_mode") {
			t.Fatalf("form_post: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<form") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Fatalf("answer with script or without CSP: %q %s", resp.Header.Get("Content-Security-Policy"), body)
		}
	})
	t.Run("form_post with an unknown client gets a page, not a form", func(t *testing.T) {
		a := h.newAuthz()
		a.params.Set("response_mode", "form_post")
		a.params.Set("client_id", "cli_unknown")
		p := h.start(t, newBrowser(t), a)
		if p.status/100 != 4 || strings.Contains(p.body, "<script") || strings.Contains(p.body, "<form") {
			t.Fatalf("got %d:\n%s", p.status, p.body)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"authorize/oversized_parameter", "authorize/invalid_redirect_uri", "authorize/unsupported_response_mode"} {
		if refusals[k] == 0 {
			t.Errorf("refusal %s not counted (%v)", k, refusals)
		}
	}
}

// TestAuthorizeRateLimit: authorization requests are bounded per address
// (each may store a login session); past the limit, 429 with Retry-After
// and nothing stored.
func TestAuthorizeRateLimit(t *testing.T) {
	h := newHarness(t, harnessOptions{authorizations: 3})
	for i := 0; i < 3; i++ {
		if p := h.start(t, newBrowser(t), h.newAuthz()); p.status != http.StatusOK {
			t.Fatalf("authorization %d within the limit: %d", i, p.status)
		}
	}
	b := newBrowser(t)
	resp, err := b.c.Get(h.gw.URL + "/oauth/authorize?" + h.newAuthz().params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "Too many") {
		t.Fatalf("fourth authorization in a minute: %d Retry-After=%q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	u, _ := url.Parse(h.gw.URL)
	if len(b.c.Jar.Cookies(u)) != 0 {
		t.Fatal("a refused authorization started a login session")
	}
}

// TestOAuthRowCaps: past oauth.max_unused_clients and
// oauth.max_login_sessions the endpoints still answer, and the oldest
// rows go, so the store holds at most the caps; registrations also hold
// at most 5 redirect URIs of 512 bytes and a document of 16 KiB.
func TestOAuthRowCaps(t *testing.T) {
	h := newHarness(t, harnessOptions{maxUnusedClients: 2, maxLoginSessions: 2})
	ctx := context.Background()
	var first string
	for i := 0; i < 4; i++ {
		b := newBrowser(t)
		if p := h.start(t, b, h.newAuthz()); p.status != http.StatusOK {
			t.Fatalf("authorization %d: %d", i, p.status)
		}
		if i == 0 {
			first = h.loginSession(t, b).SessionHash
		}
	}
	// The harness's own client is the oldest unused one: registrations
	// past the cap evict it first.
	for i := 0; i < 4; i++ {
		if status, body := h.postJSON(t, "/oauth/register", map[string]any{"redirect_uris": []string{redirectURI}}); status != http.StatusCreated {
			t.Fatalf("registration %d: %d %v", i, status, body)
		}
	}
	rows, err := h.st.CountOAuthRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rows.UnusedClients != 2 || rows.LoginSessions != 2 {
		t.Fatalf("rows past the caps: %+v", rows)
	}
	if _, err := h.st.GetLoginSession(ctx, first); err == nil {
		t.Fatal("the oldest login session is still stored")
	}

	long := "http://127.0.0.1:9/" + strings.Repeat("a", 513-len("http://127.0.0.1:9/"))
	six := []string{}
	for i := range 6 {
		six = append(six, "http://127.0.0.1:9/cb"+strings.Repeat("x", i))
	}
	for name, md := range map[string]map[string]any{
		"six redirect URIs":       {"redirect_uris": six},
		"a 513-byte redirect URI": {"redirect_uris": []string{long}},
		"a 17 KiB document":       {"redirect_uris": []string{redirectURI}, "logo_uri": strings.Repeat("l", 17<<10)},
	} {
		status, body := h.postJSON(t, "/oauth/register", md)
		if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}
	if status, body := h.postJSON(t, "/oauth/register", map[string]any{"redirect_uris": six[:5]}); status != http.StatusCreated {
		t.Fatalf("five redirect URIs: %d %v", status, body)
	}
}
