package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const testMetadataURL = "https://gw.example/.well-known/oauth-protected-resource/mcp/x"

// tokenAuth accepts exactly "good-token" and "other-token".
var tokenAuth = AuthenticatorFunc(func(_ context.Context, bearer string) (*Principal, error) {
	switch bearer {
	case "good-token", "other-token":
		return &Principal{Kind: OAuthConsent, Key: "grant:" + bearer, ScopesKnown: true}, nil
	case "nil-principal":
		return nil, nil
	}
	return nil, ErrInvalidToken
})

func TestAuthenticate(t *testing.T) {
	cases := []struct {
		name      string
		required  bool
		target    string
		auth      []string // Authorization header values
		wantCode  int
		wantKey   string // principal key when passed
		wantError string // error="…" in WWW-Authenticate; "" for none
	}{
		{"no bearer, optional: anonymous", false, "/mcp", nil, http.StatusOK, "", ""},
		{"no bearer, required: 401 without error code", true, "/mcp", nil, http.StatusUnauthorized, "", ""},
		{"valid bearer", true, "/mcp", []string{"Bearer good-token"}, http.StatusOK, "grant:good-token", ""},
		{"scheme case-insensitive", false, "/mcp", []string{"bEaReR good-token"}, http.StatusOK, "grant:good-token", ""},
		{"extra space before token", false, "/mcp", []string{"Bearer  good-token"}, http.StatusOK, "grant:good-token", ""},
		{"unknown token", false, "/mcp", []string{"Bearer bad-token"}, http.StatusUnauthorized, "", "invalid_token"},
		{"authenticator returns nil principal", false, "/mcp", []string{"Bearer nil-principal"}, http.StatusUnauthorized, "", "invalid_token"},
		{"Basic scheme", false, "/mcp", []string{"Basic dXNlcjpwYXNz"}, http.StatusUnauthorized, "", "invalid_request"},
		{"Token scheme", false, "/mcp", []string{"token good-token"}, http.StatusUnauthorized, "", "invalid_request"},
		{"Bearer without token", false, "/mcp", []string{"Bearer"}, http.StatusUnauthorized, "", "invalid_request"},
		{"Bearer with empty token", false, "/mcp", []string{"Bearer   "}, http.StatusUnauthorized, "", "invalid_request"},
		{"token with inner space", false, "/mcp", []string{"Bearer good-token extra"}, http.StatusUnauthorized, "", "invalid_request"},
		{"tab separator", false, "/mcp", []string{"Bearer\tgood-token"}, http.StatusUnauthorized, "", "invalid_request"},
		{"token with tab", false, "/mcp", []string{"Bearer good\t-token"}, http.StatusUnauthorized, "", "invalid_request"},
		{"empty header, optional endpoint", false, "/mcp", []string{""}, http.StatusUnauthorized, "", "invalid_request"},
		{"two headers", false, "/mcp", []string{"Bearer good-token", "Bearer good-token"}, http.StatusUnauthorized, "", "invalid_request"},
		{"two headers, second different", false, "/mcp", []string{"Bearer good-token", "Bearer other-token"}, http.StatusUnauthorized, "", "invalid_request"},
		{"access_token in query refused", false, "/mcp?access_token=good-token", nil, http.StatusUnauthorized, "", "invalid_request"},
		{"access_token in query refused even with a header", false, "/mcp?access_token=x", []string{"Bearer good-token"}, http.StatusUnauthorized, "", "invalid_request"},
		{"empty access_token in query refused", true, "/mcp?a=1&access_token=", nil, http.StatusUnauthorized, "", "invalid_request"},
		// Percent-encoded names decode to access_token for any reader of the
		// query; the raw-text check alone let them through.
		{"percent-encoded underscore refused", false, "/mcp?access%5Ftoken=good-token", nil, http.StatusUnauthorized, "", "invalid_request"},
		{"percent-encoded letters refused", false, "/mcp?%61ccess_token=good-token", nil, http.StatusUnauthorized, "", "invalid_request"},
		{"upper case refused", false, "/mcp?ACCESS_TOKEN=good-token", nil, http.StatusUnauthorized, "", "invalid_request"},
		{"the words access token in a value pass", false, "/mcp?note=access+token", []string{"Bearer good-token"}, http.StatusOK, "grant:good-token", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, rec := newReq(http.MethodPost, tc.target, nil)
			for _, v := range tc.auth {
				r.Header.Add("Authorization", v)
			}
			var got *Principal
			reached := false
			w := httptest.NewRecorder()
			Authenticate(tokenAuth, AuthOptions{Required: tc.required, Challenge: Challenge{ResourceMetadataURL: testMetadataURL}})(
				http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
					reached = true
					got = PrincipalFromContext(r.Context())
				})).ServeHTTP(w, r)
			if w.Code != tc.wantCode {
				t.Fatalf("status = %d, want %d (%s)", w.Code, tc.wantCode, w.Body.String())
			}
			if tc.wantCode == http.StatusOK {
				if !reached {
					t.Fatal("next handler not reached")
				}
				if (got == nil) != (tc.wantKey == "") || (got != nil && got.Key != tc.wantKey) {
					t.Fatalf("principal = %+v, want key %q", got, tc.wantKey)
				}
				if rec.Caller() != tc.wantKey {
					t.Fatalf("recorded caller %q, want %q", rec.Caller(), tc.wantKey)
				}
				return
			}
			if reached {
				t.Fatal("refused request reached the next handler")
			}
			h := w.Header().Get("WWW-Authenticate")
			if !strings.HasPrefix(h, "Bearer ") || !strings.Contains(h, `resource_metadata="`+testMetadataURL+`"`) {
				t.Errorf("WWW-Authenticate = %q", h)
			}
			if tc.wantError == "" && strings.Contains(h, "error=") {
				t.Errorf("WWW-Authenticate = %q carries an error code for a missing token", h)
			}
			if tc.wantError != "" && !strings.Contains(h, `error="`+tc.wantError+`"`) {
				t.Errorf("WWW-Authenticate = %q, want error=%q", h, tc.wantError)
			}
			if e := errorBody(t, w.Body.String()); e["code"] != "unauthenticated" {
				t.Errorf("code = %v", e["code"])
			}
			if strings.Contains(w.Body.String(), "good-token") || strings.Contains(h, "good-token") {
				t.Errorf("refusal echoes the token")
			}
		})
	}
}

func TestChallengeWithoutMetadata(t *testing.T) {
	r, _ := newReq(http.MethodPost, "/", nil)
	w := httptest.NewRecorder()
	Challenge{}.Unauthorized(w, r, "", "authentication required")
	if h := w.Header().Get("WWW-Authenticate"); h != "Bearer" {
		t.Fatalf("WWW-Authenticate = %q, want bare Bearer", h)
	}
}

func TestAccessTokenAfterSemicolonRefused(t *testing.T) {
	h := Authenticate(AuthenticatorFunc(func(context.Context, string) (*Principal, error) { return nil, ErrInvalidToken }), AuthOptions{})(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Fatal("request passed") }))
	req := httptest.NewRequest(http.MethodPost, "/mcp/forgejo?x=1;access_token=secret", nil)
	req = req.WithContext(WithRecord(req.Context(), &Record{}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d", rec.Code)
	}
}

// TestChallengeScope: an endpoint with scopes names every one of them in
// each 401, so a client asks for them all in its first authorization
// (MCP "Scope Selection Strategy") and every tool works after one login;
// an endpoint without scopes names none.
func TestChallengeScope(t *testing.T) {
	both := []string{"documents:read", "catalog:read"}
	for _, tc := range []struct {
		name   string
		scopes []string
		auth   []string
		want   string
	}{
		{"missing token", both, nil, `Bearer scope="documents:read catalog:read", resource_metadata="` + testMetadataURL + `"`},
		{"invalid token", both, []string{"Bearer nope"}, `Bearer error="invalid_token", scope="documents:read catalog:read", resource_metadata="` + testMetadataURL + `"`},
		{"malformed header", both, []string{"Basic x"}, `Bearer error="invalid_request", scope="documents:read catalog:read", resource_metadata="` + testMetadataURL + `"`},
		{"no scope configured", nil, nil, `Bearer resource_metadata="` + testMetadataURL + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newReq(http.MethodPost, "/mcp", nil)
			for _, v := range tc.auth {
				r.Header.Add("Authorization", v)
			}
			w := httptest.NewRecorder()
			Authenticate(tokenAuth, AuthOptions{Required: true, Challenge: Challenge{ResourceMetadataURL: testMetadataURL, Scopes: tc.scopes}})(
				http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Fatal("reached") })).ServeHTTP(w, r)
			if got := w.Header().Get("WWW-Authenticate"); w.Code != http.StatusUnauthorized || got != tc.want {
				t.Fatalf("%d WWW-Authenticate %q, want %q", w.Code, got, tc.want)
			}
		})
	}
}
