package server

import (
	"context"
	"errors"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// TestForgejoAuthenticatorRefusesGatewayTokens: every gateway token is
// refused on the passthrough endpoint (so it never reaches Forgejo); any
// other bearer becomes a passthrough principal keyed on its hash.
func TestForgejoAuthenticatorRefusesGatewayTokens(t *testing.T) {
	for _, bearer := range []string{"agw_at_x", "agw_rt_x", "agw_lt_x", "AGW_AT_x", "agw_"} {
		t.Run(bearer, func(t *testing.T) {
			p, err := forgejoAuthenticator.Authenticate(context.Background(), bearer)
			if !errors.Is(err, middleware.ErrInvalidToken) || p != nil {
				t.Fatalf("got %v, %v; want ErrInvalidToken", p, err)
			}
		})
	}
	p, err := forgejoAuthenticator.Authenticate(context.Background(), "forgejo-token")
	if err != nil || p.Kind != middleware.ForgejoPassthrough || p.Key != "fj:"+middleware.CredentialHash("forgejo-token") || p.ForgejoCredential().Token != "forgejo-token" {
		t.Fatalf("passthrough: %+v, %v", p, err)
	}
}
