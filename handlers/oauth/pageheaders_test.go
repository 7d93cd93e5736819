package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestBrowserAnswersCannotBeFramedOrLeak: every answer the browser sees
// from the authorization server forbids framing (clickjacking,
// RFC 9700 §4.16: CSP frame-ancestors 'none'), its pages send no Referer
// onwards (RFC 9700 §4.2), and the consent answer reaches the client as a
// 303, which a browser follows with GET and without the form body
// (RFC 9700 §4.12: never 307).
func TestBrowserAnswersCannotBeFramedOrLeak(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	check := func(t *testing.T, what string, hdr http.Header, page bool) {
		t.Helper()
		if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q allows framing", what, csp)
		}
		if page && hdr.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q", what, hdr.Get("Referrer-Policy"))
		}
	}
	a := h.newAuthz()
	a.params.Del("code_challenge")
	resp, err := http.Get(h.gw.URL + "/oauth/authorize?" + a.params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	check(t, "the error page", resp.Header, true)

	b := newBrowser(t)
	a = h.newAuthz()
	p := h.login(t, b, a, "alice", "alice-pw")
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/oauth/consent", nil)
	resp, err = b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	check(t, "the consent page", resp.Header, true)

	form := url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}}
	req, _ = http.NewRequest(http.MethodPost, h.gw.URL+"/oauth/consent", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), redirectURI+"?") {
		t.Fatalf("consent answer: %d to %q, want 303 to the client", resp.StatusCode, resp.Header.Get("Location"))
	}
	check(t, "the consent answer", resp.Header, false)
}
