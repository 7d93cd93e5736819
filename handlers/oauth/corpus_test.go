package oauth_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/golden"
)

// The protocol corpus: one scripted run through every grant, every error
// the authorize, token and revocation endpoints give, replay, reuse, a
// PKCE downgrade, a wrong resource and a wrong client, each step recorded
// as the status and OAuth error code it got (and, where it matters, whether
// a token still works afterwards). Its golden file was recorded from the
// authorization server as it stood on ory/fosite, and the server's own core
// had to reproduce it line for line before fosite was removed
// (docs/oauth.md#the-core-and-its-corpus); it keeps that answer fixed now.

// corpusStep is one request of the script and how its answer is recorded.
type corpusStep struct {
	name string
	run  func(t *testing.T, c *corpusRun) string
}

// corpusRun is the state the script carries between steps: the harness,
// one authorization's code and tokens.
type corpusRun struct {
	h      *harness
	a      *authz
	code   string
	tokens map[string]tokenAnswer
}

// answer renders a token or revocation answer: status and error code.
func answer(a tokenAnswer) string {
	code := a.str("error")
	if code == "" {
		code = "-"
	}
	return fmt.Sprintf("%d %s", a.status, code)
}

var pageErrorCode = regexp.MustCompile(`Error code: <code>([a-z_]+)</code>`)

// authorizeAnswer renders /oauth/authorize's answer to a browser: a
// redirect to the identity provider, or the error page's status and code.
func (c *corpusRun) authorizeAnswer(t *testing.T, edit func(url.Values)) string {
	a := c.h.newAuthz()
	edit(a.params)
	req, _ := http.NewRequest(http.MethodGet, c.h.gw.URL+"/oauth/authorize?"+a.params.Encode(), nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 {
		if strings.HasPrefix(loc, c.h.idp.Issuer()) {
			return fmt.Sprintf("%d to the identity provider", resp.StatusCode)
		}
		return fmt.Sprintf("%d elsewhere", resp.StatusCode)
	}
	code := "-"
	if m := pageErrorCode.FindStringSubmatch(body); m != nil {
		code = m[1]
	}
	return fmt.Sprintf("%d page %s", resp.StatusCode, code)
}

// fresh starts a new authorization and returns its code.
func (c *corpusRun) fresh(t *testing.T) {
	c.a = c.h.newAuthz()
	c.code = c.h.code(t, c.a)
}

func (c *corpusRun) exchangeAs(t *testing.T, name string, extra ...string) string {
	a := c.h.exchange(t, c.code, c.a.verifier, extra...)
	c.tokens[name] = a
	return answer(a)
}

func (c *corpusRun) validity(t *testing.T, name, kind string) string {
	if c.h.valid(t, c.tokens[name].str(kind)) {
		return "valid"
	}
	return "not valid"
}

func noPKCE(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }

var corpus = []corpusStep{
	// Authorize: the decision before the login.
	{"authorize: valid", func(t *testing.T, c *corpusRun) string { return c.authorizeAnswer(t, func(url.Values) {}) }},
	{"authorize: no resource (defaults to the one served)", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Del("resource") })
	}},
	{"authorize: no state", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Del("state") })
	}},
	{"authorize: no scope (every scope)", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Del("scope") })
	}},
	{"authorize: no PKCE", func(t *testing.T, c *corpusRun) string { return c.authorizeAnswer(t, noPKCE) }},
	{"authorize: plain PKCE (downgrade)", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("code_challenge_method", "plain") })
	}},
	{"authorize: challenge without method", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Del("code_challenge_method") })
	}},
	{"authorize: wrong resource", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("resource", "https://elsewhere.example/mcp") })
	}},
	{"authorize: resource with a trailing slash", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("resource", q.Get("resource")+"/") })
	}},
	{"authorize: two resources", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Add("resource", q.Get("resource")) })
	}},
	{"authorize: unknown scope", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("scope", "documents:read admin:all") })
	}},
	{"authorize: implicit response type", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("response_type", "token") })
	}},
	{"authorize: no response type", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Del("response_type") })
	}},
	{"authorize: code and token response type", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("response_type", "code token") })
	}},
	{"authorize: unknown client", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("client_id", "cli_unknown") })
	}},
	{"authorize: no client", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Del("client_id") })
	}},
	{"authorize: unregistered redirect URI", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:9/other") })
	}},
	{"authorize: no redirect URI (the one registered)", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Del("redirect_uri") })
	}},
	{"authorize: form_post", func(t *testing.T, c *corpusRun) string {
		return c.authorizeAnswer(t, func(q url.Values) { q.Set("response_mode", "form_post") })
	}},

	// authorization_code: every refusal before a good exchange, which
	// none of them may have spent.
	{"code: wrong resource", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "resource", "https://elsewhere.example/mcp")
	}},
	{"code: two resources", func(t *testing.T, c *corpusRun) string {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {c.code}, "redirect_uri": {redirectURI},
			"client_id": {c.h.clientID}, "code_verifier": {c.a.verifier}, "resource": {c.h.resource, "https://elsewhere.example/mcp"}}
		return answer(c.h.tokenRequest(t, form))
	}},
	{"code: unknown grant type", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "x", "grant_type", "password")
	}},
	{"code: client_credentials grant", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "x", "grant_type", "client_credentials")
	}},
	{"code: no grant type", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "x", "grant_type", "")
	}},
	{"code: no client", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "x", "client_id", "")
	}},
	{"code: unknown client", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "x", "client_id", "cli_unknown")
	}},
	{"code: no code", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "x", "code", "")
	}},
	{"code: unknown code", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "x", "code", "agw_ac_unknown")
	}},
	{"code: valid exchange after the refusals above", func(t *testing.T, c *corpusRun) string {
		return c.exchangeAs(t, "first")
	}},
	{"code: replay", func(t *testing.T, c *corpusRun) string { return c.exchangeAs(t, "x") }},
	{"code: the replayed code's access token", func(t *testing.T, c *corpusRun) string {
		return c.validity(t, "first", "access_token")
	}},
	{"code: the replayed code's refresh token", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["first"].str("refresh_token")))
	}},
	{"code: wrong verifier", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "code_verifier", c.a.verifier[:len(c.a.verifier)-1]+"x")
	}},
	{"code: the right verifier after a wrong one", func(t *testing.T, c *corpusRun) string { return c.exchangeAs(t, "x") }},
	{"code: no verifier (PKCE downgrade)", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "code_verifier", "")
	}},
	{"code: short verifier", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "code_verifier", "short")
	}},
	{"code: another client's code", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		other := c.h.register(t, map[string]any{"redirect_uris": []string{redirectURI}})["client_id"].(string)
		return c.exchangeAs(t, "x", "client_id", other)
	}},
	{"code: redirect URI mismatch", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "redirect_uri", "http://127.0.0.1:9/other")
	}},
	{"code: no redirect URI where the request had one", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "redirect_uri", "")
	}},
	{"code: a refresh token as the code", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		good := c.exchangeAs(t, "second")
		return good + "; " + c.exchangeAs(t, "x", "code", c.tokens["second"].str("refresh_token"))
	}},
	{"code: resource with a trailing slash", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "resource", c.h.resource+"/")
	}},
	{"code: empty resource", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		return c.exchangeAs(t, "x", "resource", "")
	}},

	// refresh_token: rotation, narrowing, refusals, reuse.
	{"refresh: another client", func(t *testing.T, c *corpusRun) string {
		other := c.h.register(t, map[string]any{"redirect_uris": []string{redirectURI}})["client_id"].(string)
		return answer(c.h.refresh(t, c.tokens["second"].str("refresh_token"), "client_id", other))
	}},
	{"refresh: wrong resource", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["second"].str("refresh_token"), "resource", "https://elsewhere.example/mcp"))
	}},
	{"refresh: wider scope", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["second"].str("refresh_token"), "scope", "documents:read catalog:read"))
	}},
	{"refresh: unknown scope", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["second"].str("refresh_token"), "scope", "admin:all"))
	}},
	{"refresh: an access token", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["second"].str("access_token")))
	}},
	{"refresh: unknown token", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, "agw_rt_unknown"))
	}},
	{"refresh: no token", func(t *testing.T, c *corpusRun) string { return answer(c.h.refresh(t, "")) }},
	{"refresh: valid, same scope", func(t *testing.T, c *corpusRun) string {
		a := c.h.refresh(t, c.tokens["second"].str("refresh_token"), "scope", "documents:read")
		c.tokens["rotated"] = a
		return answer(a) + " scope=" + a.str("scope")
	}},
	{"refresh: the access token before the rotation", func(t *testing.T, c *corpusRun) string {
		return c.validity(t, "second", "access_token")
	}},
	{"refresh: reuse of the rotated token", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["second"].str("refresh_token")))
	}},
	{"refresh: the family's newest access token after reuse", func(t *testing.T, c *corpusRun) string {
		return c.validity(t, "rotated", "access_token")
	}},
	{"refresh: the family's newest refresh token after reuse", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["rotated"].str("refresh_token")))
	}},

	// Revocation (RFC 7009).
	{"revoke: another client's access token", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		c.exchangeAs(t, "third")
		other := c.h.register(t, map[string]any{"redirect_uris": []string{redirectURI}})["client_id"].(string)
		return answer(revokeRequest(t, c.h, url.Values{"token": {c.tokens["third"].str("access_token")}, "client_id": {other}}))
	}},
	{"revoke: unknown token", func(t *testing.T, c *corpusRun) string {
		return answer(revokeRequest(t, c.h, url.Values{"token": {"agw_at_unknown"}, "client_id": {c.h.clientID}}))
	}},
	{"revoke: no token", func(t *testing.T, c *corpusRun) string {
		return answer(revokeRequest(t, c.h, url.Values{"client_id": {c.h.clientID}}))
	}},
	{"revoke: no client", func(t *testing.T, c *corpusRun) string {
		return answer(revokeRequest(t, c.h, url.Values{"token": {c.tokens["third"].str("access_token")}}))
	}},
	{"revoke: unknown client", func(t *testing.T, c *corpusRun) string {
		return answer(revokeRequest(t, c.h, url.Values{"token": {c.tokens["third"].str("access_token")}, "client_id": {"cli_unknown"}}))
	}},
	{"revoke: the access token still works", func(t *testing.T, c *corpusRun) string {
		return c.validity(t, "third", "access_token")
	}},
	{"revoke: the owner's access token", func(t *testing.T, c *corpusRun) string {
		return answer(revokeRequest(t, c.h, url.Values{"token": {c.tokens["third"].str("access_token")}, "client_id": {c.h.clientID}}))
	}},
	{"revoke: the family's refresh token after", func(t *testing.T, c *corpusRun) string {
		return answer(c.h.refresh(t, c.tokens["third"].str("refresh_token")))
	}},
	{"revoke: the owner's refresh token, hinted as an access token", func(t *testing.T, c *corpusRun) string {
		c.fresh(t)
		c.exchangeAs(t, "fourth")
		got := answer(revokeRequest(t, c.h, url.Values{"token": {c.tokens["fourth"].str("refresh_token")},
			"token_type_hint": {"access_token"}, "client_id": {c.h.clientID}}))
		return got + "; access token " + c.validity(t, "fourth", "access_token")
	}},
	{"revoke: a revoked token again", func(t *testing.T, c *corpusRun) string {
		return answer(revokeRequest(t, c.h, url.Values{"token": {c.tokens["fourth"].str("refresh_token")}, "client_id": {c.h.clientID}}))
	}},
}

// TestProtocolCorpus runs the corpus and compares each step's answer with
// testdata/protocol_corpus.golden.
func TestProtocolCorpus(t *testing.T) {
	c := &corpusRun{h: newHarness(t, harnessOptions{}), tokens: map[string]tokenAnswer{}}
	var out strings.Builder
	for _, step := range corpus {
		fmt.Fprintf(&out, "%s: %s\n", step.name, step.run(t, c))
	}
	golden.Compare(t, "testdata/protocol_corpus.golden", []byte(out.String()))
}
