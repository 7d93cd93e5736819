package e2e

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestOAuthConsentSaysWhatTheTokenCarries, through the binary: a client
// that alice authorized for documents:read asks again for
// workflow:dispatch alone (a step-up). The consent page says what was held
// before, what is asked now, and that the token carries both — and the
// token that comes back carries exactly that. It used to say "Nothing is
// granted to this client on this project yet" beside "The client keeps
// documents:read, granted to it before" and promised "a consent for
// exactly these scopes … never widened".
func TestOAuthConsentSaysWhatTheTokenCarries(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	st, clientID := registerClient(t, o.gw.URL, nil)
	if st != http.StatusCreated || clientID == "" {
		t.Fatalf("register: %d", st)
	}
	authorize := func(scope string) (page string, tok map[string]any) {
		t.Helper()
		params, verifier := authzParams(o.gw.URL, clientID)
		params.Set("scope", scope)
		browser, resp, body := consentPage(t, o.gw.URL, params)
		csrf, project := consentCSRF.FindStringSubmatch(body), projectOpt.FindStringSubmatch(body)
		if csrf == nil || project == nil {
			t.Fatalf("want the consent page, got %d:\n%s", resp.StatusCode, body)
		}
		answer, err := browser.PostForm(o.gw.URL+"/oauth/consent", url.Values{
			"csrf_token": {html.UnescapeString(csrf[1])}, "project": {project[1]}, "action": {"allow"}})
		if err != nil {
			t.Fatal(err)
		}
		answer.Body.Close()
		loc, _ := url.Parse(answer.Header.Get("Location"))
		if answer.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
			t.Fatalf("consent: %d %q", answer.StatusCode, answer.Header.Get("Location"))
		}
		st, tok := tokenGrant(t, o.gw.URL, url.Values{
			"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {headlessRedirect},
			"client_id": {clientID}, "code_verifier": {verifier},
		})
		if st != http.StatusOK {
			t.Fatalf("token: %d %v", st, tok)
		}
		o.canaries.Add("an OAuth access token", str(tok["access_token"]))
		o.canaries.Add("an OAuth refresh token", str(tok["refresh_token"]))
		return html.UnescapeString(body), tok
	}

	page, tok := authorize("documents:read")
	if want := "Nothing is granted to this client on this project yet. The token will carry the scopes asked now: documents:read."; !strings.Contains(page, want) {
		t.Fatalf("first consent page lacks %q:\n%s", want, page)
	}
	if !sameScopes(str(tok["scope"]), []string{"documents:read"}) {
		t.Fatalf("first token: %v", tok["scope"])
	}

	page, tok = authorize("workflow:dispatch")
	want := "Held before by this client on this project: documents:read. Asked now: workflow:dispatch. " +
		"The token will carry both: documents:read, workflow:dispatch."
	if !strings.Contains(page, want) {
		t.Fatalf("the step-up's consent page lacks %q:\n%s", want, page)
	}
	for _, wrong := range []string{"Nothing is granted", "exactly these scopes", "never widened"} {
		if strings.Contains(page, wrong) {
			t.Fatalf("the step-up's consent page says %q:\n%s", wrong, page)
		}
	}
	if !sameScopes(str(tok["scope"]), []string{"documents:read", "workflow:dispatch"}) {
		t.Fatalf("the step-up's token carries %v, the page said documents:read and workflow:dispatch", tok["scope"])
	}
}
