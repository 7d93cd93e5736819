package oauth_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
)

// TestIdentityProvider checks the gateway's relying-party side against the
// real provider: a verified subject on success, and refusals for a wrong
// nonce, a wrong PKCE verifier, a replayed code, and an issuer that does
// not match the provider's discovery document.
func TestIdentityProvider(t *testing.T) {
	const callback = "http://127.0.0.1:9/oauth/callback"
	idp, err := oidcprovider.Start(oidcprovider.Options{
		Users:   []oidcprovider.User{{Subject: alice, Username: "alice", Password: "pw"}},
		Clients: []oidcprovider.Client{{ID: "gateway", Secret: clientSecret, RedirectURIs: []string{callback}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	newRP := func(issuer string) *oauth.IdentityProvider {
		return oauth.NewIdentityProvider(oauth.IdentityProviderConfig{
			Issuer: issuer, ClientID: "gateway", ClientSecret: clientSecret,
			Scopes: []string{"openid"}, RedirectURL: callback,
		})
	}
	rp := newRP(idp.Issuer())
	ctx := context.Background()

	// login returns a code from the provider for a login with nonce.
	login := func(t *testing.T, nonce, verifier string) string {
		t.Helper()
		u, err := rp.AuthCodeURL(ctx, "state-123456", nonce, verifier)
		if err != nil {
			t.Fatal(err)
		}
		jar, _ := cookiejar.New(nil)
		var code string
		c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), callback) {
				code = req.URL.Query().Get("code")
				return http.ErrUseLastResponse
			}
			return nil
		}}
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		m := hiddenID.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no login form:\n%s", body)
		}
		resp, err = c.PostForm(idp.Issuer()+"/login", url.Values{"id": {m[1]}, "username": {"alice"}, "password": {"pw"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if code == "" {
			t.Fatal("the provider did not redirect with a code")
		}
		return code
	}

	t.Run("verified subject", func(t *testing.T) {
		v := oauth2.GenerateVerifier()
		code := login(t, "nonce-1", v)
		sub, err := rp.Exchange(ctx, code, v, "nonce-1")
		if err != nil || sub != alice {
			t.Fatalf("subject %q, %v", sub, err)
		}
		if _, err := rp.Exchange(ctx, code, v, "nonce-1"); err == nil {
			t.Fatal("a provider code was accepted twice")
		}
	})
	t.Run("wrong nonce", func(t *testing.T) {
		v := oauth2.GenerateVerifier()
		code := login(t, "nonce-1", v)
		if _, err := rp.Exchange(ctx, code, v, "nonce-2"); err == nil || !strings.Contains(err.Error(), "nonce") {
			t.Fatalf("nonce mismatch: %v", err)
		}
	})
	t.Run("wrong PKCE verifier", func(t *testing.T) {
		code := login(t, "nonce-1", oauth2.GenerateVerifier())
		if _, err := rp.Exchange(ctx, code, oauth2.GenerateVerifier(), "nonce-1"); err == nil {
			t.Fatal("the provider's code was redeemed with another verifier")
		}
	})
	t.Run("issuer mismatch", func(t *testing.T) {
		// Same server under another name: discovery names the real issuer.
		other := strings.Replace(idp.Issuer(), "127.0.0.1", "localhost", 1)
		if _, err := newRP(other).AuthCodeURL(ctx, "s", "n", oauth2.GenerateVerifier()); err == nil || !strings.Contains(err.Error(), "issuer") {
			t.Fatalf("issuer mismatch: %v", err)
		}
	})
}
