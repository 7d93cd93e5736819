package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// The decisions are pure: these tables give each one rows and a request
// and check the outcome, with no store or HTTP in between.

const testResource = "https://gw.example/mcp/documents"

var (
	testServed   = []string{"catalog:read", "documents:read"}
	testVerifier = strings.Repeat("v", 43)
	testNow      = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
)

func challengeOf(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func code(edit func(*store.AuthorizationCode)) store.AuthorizationCode {
	c := store.AuthorizationCode{
		CodeHash: "h", RequestID: "req1", ConsentID: "grt_1", ClientID: "cli_a", RedirectURI: "http://127.0.0.1:9/cb",
		Scopes: []string{"documents:read"}, CodeChallenge: challengeOf(testVerifier), CodeChallengeMethod: "S256",
		RequestedAt: testNow, ExpiresAt: testNow.Add(time.Minute),
	}
	if edit != nil {
		edit(&c)
	}
	return c
}

func TestDecideCodeExchange(t *testing.T) {
	used := testNow.Add(-time.Second)
	good := tokenRequest{grantType: "authorization_code", codeVerifier: testVerifier, redirectURI: "http://127.0.0.1:9/cb"}
	with := func(edit func(*tokenRequest)) tokenRequest { r := good; edit(&r); return r }
	for _, tc := range []struct {
		name   string
		req    tokenRequest
		code   store.AuthorizationCode
		found  bool
		client string
		want   string // error code, "" for success
		revoke string
		burn   bool
	}{
		{"valid", good, code(nil), true, "cli_a", "", "", false},
		{"unknown code", good, store.AuthorizationCode{}, false, "cli_a", codeInvalidGrant, "", false},
		{"replayed code revokes its family", good, code(func(c *store.AuthorizationCode) { c.UsedAt = &used }), true, "cli_a", codeInvalidGrant, "req1", false},
		{"replay is found before another client", good, code(func(c *store.AuthorizationCode) { c.UsedAt = &used }), true, "cli_b", codeInvalidGrant, "req1", false},
		{"expired", good, code(func(c *store.AuthorizationCode) { c.ExpiresAt = testNow }), true, "cli_a", codeInvalidGrant, "", false},
		{"another client", good, code(nil), true, "cli_b", codeInvalidGrant, "", false},
		{"another redirect URI", with(func(r *tokenRequest) { r.redirectURI = "http://127.0.0.1:9/other" }), code(nil), true, "cli_a", codeInvalidGrant, "", false},
		{"no redirect URI where one was sent", with(func(r *tokenRequest) { r.redirectURI = "" }), code(nil), true, "cli_a", codeInvalidGrant, "", false},
		{"no redirect URI where none was sent", with(func(r *tokenRequest) { r.redirectURI = "" }), code(func(c *store.AuthorizationCode) { c.RedirectURI = "" }), true, "cli_a", "", "", false},
		{"wrong verifier burns the challenge", with(func(r *tokenRequest) { r.codeVerifier = strings.Repeat("w", 43) }), code(nil), true, "cli_a", codeInvalidGrant, "", true},
		{"no verifier (downgrade) burns the challenge", with(func(r *tokenRequest) { r.codeVerifier = "" }), code(nil), true, "cli_a", codeInvalidGrant, "", true},
		{"short verifier", with(func(r *tokenRequest) { r.codeVerifier = "short" }), code(nil), true, "cli_a", codeInvalidGrant, "", true},
		{"verifier with a bad character", with(func(r *tokenRequest) { r.codeVerifier = strings.Repeat("v", 42) + "+" }), code(nil), true, "cli_a", codeInvalidGrant, "", true},
		{"the challenge is gone", good, code(func(c *store.AuthorizationCode) { c.CodeChallenge, c.CodeChallengeMethod = "", "" }), true, "cli_a", codeInvalidGrant, "", false},
		{"the challenge is gone, no verifier", with(func(r *tokenRequest) { r.codeVerifier = "" }), code(func(c *store.AuthorizationCode) { c.CodeChallenge, c.CodeChallengeMethod = "", "" }), true, "cli_a", codeInvalidRequest, "", false},
		{"the verifier as plain challenge", good, code(func(c *store.AuthorizationCode) { c.CodeChallenge, c.CodeChallengeMethod = testVerifier, "plain" }), true, "cli_a", codeInvalidGrant, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decideCodeExchange(tc.req, tc.code, tc.found, tc.client, testNow)
			if got := errCode(v.refusal); got != tc.want || v.revokeFamily != tc.revoke || v.burnChallenge != tc.burn {
				t.Fatalf("got %q revoke %q burn %v, want %q revoke %q burn %v", got, v.revokeFamily, v.burnChallenge, tc.want, tc.revoke, tc.burn)
			}
		})
	}
}

func errCode(e *oauthError) string {
	if e == nil {
		return ""
	}
	return e.code
}

func refreshRow(edit func(*store.TokenRecord)) store.TokenRecord {
	t := store.TokenRecord{
		Hash: "rh", Kind: store.TokenRefresh, FamilyID: "req1", ExpiresAt: testNow.Add(time.Hour),
		Scopes:  []string{"catalog:read", "documents:read"},
		Consent: store.Consent{ID: "grt_1", ClientID: "cli_a", Scopes: []string{"catalog:read", "documents:read"}},
	}
	if edit != nil {
		edit(&t)
	}
	return t
}

func TestDecideRefresh(t *testing.T) {
	revoked := testNow
	ask := func(scopes ...string) tokenRequest { return tokenRequest{grantType: "refresh_token", scope: scopes} }
	for _, tc := range []struct {
		name         string
		req          tokenRequest
		row          store.TokenRecord
		found        bool
		client       string
		served       []string
		want         string
		scopes       []string
		narrowed     bool
		revokeFamily string
		revokeToken  string
	}{
		{"valid keeps every scope", ask(), refreshRow(nil), true, "cli_a", testServed, "", []string{"catalog:read", "documents:read"}, false, "", ""},
		{"the same scopes asked are no narrowing", ask("documents:read", "catalog:read"), refreshRow(nil), true, "cli_a", testServed, "", []string{"catalog:read", "documents:read"}, false, "", ""},
		{"narrowing", ask("documents:read", "documents:read"), refreshRow(nil), true, "cli_a", testServed, "", []string{"documents:read"}, true, "", ""},
		{"widening", ask("documents:read", "workflow:dispatch"), refreshRow(nil), true, "cli_a", testServed, codeInvalidScope, nil, false, "", ""},
		{"unknown token", ask(), store.TokenRecord{}, false, "cli_a", testServed, codeInvalidGrant, nil, false, "", ""},
		{"an access token", ask(), refreshRow(func(r *store.TokenRecord) { r.Kind = store.TokenAccess }), true, "cli_a", testServed, codeInvalidGrant, nil, false, "", ""},
		{"reuse revokes the family", ask(), refreshRow(func(r *store.TokenRecord) { r.Used = true }), true, "cli_a", testServed, codeInvalidGrant, nil, false, "req1", ""},
		{"reuse by another client revokes too", ask(), refreshRow(func(r *store.TokenRecord) { r.Used = true }), true, "cli_b", testServed, codeInvalidGrant, nil, false, "req1", ""},
		{"reuse outside a family revokes the token", ask(), refreshRow(func(r *store.TokenRecord) { r.Used, r.FamilyID = true, "" }), true, "cli_a", testServed, codeInvalidGrant, nil, false, "", "rh"},
		{"revoked", ask(), refreshRow(func(r *store.TokenRecord) { r.Revoked = true }), true, "cli_a", testServed, codeInvalidGrant, nil, false, "", ""},
		{"consent revoked", ask(), refreshRow(func(r *store.TokenRecord) { r.Consent.RevokedAt = &revoked }), true, "cli_a", testServed, codeInvalidGrant, nil, false, "", ""},
		{"expired", ask(), refreshRow(func(r *store.TokenRecord) { r.ExpiresAt = testNow }), true, "cli_a", testServed, codeInvalidGrant, nil, false, "", ""},
		{"another client", ask(), refreshRow(nil), true, "cli_b", testServed, codeInvalidGrant, nil, false, "", ""},
		{"a scope no longer served", ask(), refreshRow(nil), true, "cli_a", []string{"documents:read"}, codeInvalidScope, nil, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decideRefresh(tc.req, tc.row, tc.found, tc.client, tc.served, testNow)
			if got := errCode(v.refusal); got != tc.want || !slices.Equal(v.scopes, tc.scopes) || v.narrowed != tc.narrowed ||
				v.revokeFamily != tc.revokeFamily || v.revokeToken != tc.revokeToken {
				t.Fatalf("got %q %v narrowed %v revoke %q/%q", got, v.scopes, v.narrowed, v.revokeFamily, v.revokeToken)
			}
		})
	}
}

func TestDecideRevocation(t *testing.T) {
	revoked := testNow
	access := func(edit func(*store.TokenRecord)) store.TokenRecord {
		return refreshRow(func(r *store.TokenRecord) {
			r.Kind, r.Hash = store.TokenAccess, "ah"
			if edit != nil {
				edit(r)
			}
		})
	}
	for _, tc := range []struct {
		name          string
		row           store.TokenRecord
		found         bool
		client        string
		want          string
		family, token string
	}{
		{"an access token ends its family", access(nil), true, "cli_a", "", "req1", ""},
		{"a refresh token ends its family", refreshRow(nil), true, "cli_a", "", "req1", ""},
		{"a lone access token ends alone", access(func(r *store.TokenRecord) { r.FamilyID = "" }), true, "cli_a", "", "", "ah"},
		{"another client's token", access(nil), true, "cli_b", codeUnauthorizedClient, "", ""},
		{"unknown: nothing, 200", store.TokenRecord{}, false, "cli_a", "", "", ""},
		{"revoked: nothing", access(func(r *store.TokenRecord) { r.Revoked = true }), true, "cli_b", "", "", ""},
		{"used: nothing", refreshRow(func(r *store.TokenRecord) { r.Used = true }), true, "cli_a", "", "", ""},
		{"consent revoked: nothing", access(func(r *store.TokenRecord) { r.Consent.RevokedAt = &revoked }), true, "cli_a", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decideRevocation(tc.row, tc.found, tc.client)
			if got := errCode(v.refusal); got != tc.want || v.family != tc.family || v.token != tc.token {
				t.Fatalf("got %q family %q token %q", got, v.family, v.token)
			}
		})
	}
}

func TestDecideAuthorization(t *testing.T) {
	cl := client{id: "cli_a", redirectURIs: []string{"http://127.0.0.1:9/cb", "https://app.example/cb"}}
	valid := func() url.Values {
		return url.Values{
			"response_type": {"code"}, "client_id": {"cli_a"}, "redirect_uri": {"http://127.0.0.1:9/cb"},
			"scope": {"documents:read"}, "state": {"s"}, "code_challenge": {challengeOf(testVerifier)},
			"code_challenge_method": {"S256"}, "resource": {testResource},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(url.Values)
		cl   client
		want string
	}{
		{"valid", func(url.Values) {}, cl, ""},
		{"loopback with another port", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:4711/cb") }, cl, ""},
		{"loopback with another path", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:4711/other") }, cl, codeInvalidRequest},
		{"https with another port", func(q url.Values) { q.Set("redirect_uri", "https://app.example:8443/cb") }, cl, codeInvalidRequest},
		{"no redirect URI, two registered", func(q url.Values) { q.Del("redirect_uri") }, cl, codeInvalidRequest},
		{"no redirect URI, one registered", func(q url.Values) { q.Del("redirect_uri") }, client{id: "cli_a", redirectURIs: []string{"https://app.example/cb"}}, ""},
		{"redirect URI checked before scope", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb"); q.Set("scope", "admin") }, cl, codeInvalidRequest},
		{"unknown scope", func(q url.Values) { q.Set("scope", "documents:read admin") }, cl, codeInvalidScope},
		{"scope checked before response type", func(q url.Values) { q.Set("scope", "admin"); q.Set("response_type", "token") }, cl, codeInvalidScope},
		{"token response type", func(q url.Values) { q.Set("response_type", "token") }, cl, codeUnsupportedResponseType},
		{"code and token", func(q url.Values) { q.Set("response_type", "code token") }, cl, codeUnsupportedResponseType},
		{"no response type", func(q url.Values) { q.Del("response_type") }, cl, codeUnsupportedResponseType},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, cl, codeInvalidRequest},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, cl, codeInvalidRequest},
		{"PKCE checked before resource", func(q url.Values) { q.Del("code_challenge"); q.Set("resource", "https://x.example") }, cl, codeInvalidRequest},
		{"no resource", func(q url.Values) { q.Del("resource") }, cl, ""},
		{"resource with a trailing slash", func(q url.Values) { q.Set("resource", testResource+"/") }, cl, ""},
		{"another resource", func(q url.Values) { q.Set("resource", "https://gw.example/mcp/forgejo") }, cl, codeInvalidTarget},
		{"two resources", func(q url.Values) { q.Add("resource", testResource) }, cl, codeInvalidTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := valid()
			tc.edit(q)
			a, e := decideAuthorization(q, tc.cl, testServed, testResource)
			if got := errCode(e); got != tc.want {
				t.Fatalf("got %q (%v), want %q", got, e, tc.want)
			}
			if e == nil && (a.redirect == nil || a.client.id != "cli_a" || a.challenge == "") {
				t.Fatalf("authorization %+v", a)
			}
		})
	}
}

// TestErrorStatus: one table maps every code the decisions give to its
// status (RFC 6749 §5.2: 401 for invalid_client, 400 for the others a
// client causes).
func TestErrorStatus(t *testing.T) {
	for code, want := range map[string]int{
		codeInvalidRequest: 400, codeInvalidClient: 401, codeInvalidGrant: 400, codeUnauthorizedClient: 400,
		codeInvalidScope: 400, codeInvalidTarget: 400, codeUnsupportedResponseType: 400, codeUnsupportedResponseMode: 400,
		codeAccessDenied: 403, codeServerError: 500, codeTemporarilyUnavailable: 503,
	} {
		if got := refuse(code, "").httpStatus(); got != want {
			t.Errorf("%s: %d, want %d", code, got, want)
		}
	}
	if got := (&oauthError{code: codeTemporarilyUnavailable, status: 429}).httpStatus(); got != 429 {
		t.Errorf("an override gives %d", got)
	}
}
