package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIsGatewayToken(t *testing.T) {
	cases := []struct {
		bearer string
		want   bool
	}{
		{"agw_at_0123", true},
		{"agw_rt_0123", true},
		{"agw_lt_0123", true},
		{"agw_", true},
		{"AGW_AT_0123", true}, // case-mangled: still the gateway's secret
		{"Agw_x", true},
		{"agw", false},
		{"agwx_at_0123", false},
		{"xagw_at_0123", false},
		{"", false},
		{"ghp_0123", false},
	}
	for _, c := range cases {
		t.Run(c.bearer, func(t *testing.T) {
			if got := IsGatewayToken(c.bearer); got != c.want {
				t.Fatalf("IsGatewayToken(%q) = %v, want %v", c.bearer, got, c.want)
			}
		})
	}
}

// TestAuthenticateRecordsRefusedTokenHash: a refused bearer is logged by
// its hash, never in clear, and two different bearers get different keys.
func TestAuthenticateRecordsRefusedTokenHash(t *testing.T) {
	keys := map[string]bool{}
	for _, token := range []string{"agw_at_secret-one", "agw_at_secret-two"} {
		r, rec := newReq(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		Authenticate(AuthenticatorFunc(func(context.Context, string) (*Principal, error) { return nil, ErrInvalidToken }), AuthOptions{})(mustNotRun(t)).ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", w.Code)
		}
		got := rec.Caller()
		if got != "refused:"+CredentialHash(token) || strings.Contains(got, "secret") {
			t.Fatalf("recorded caller %q", got)
		}
		keys[got] = true
	}
	if len(keys) != 2 {
		t.Fatalf("two tokens share one key: %v", keys)
	}
}
