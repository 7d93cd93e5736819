package oauth

import (
	"errors"
	"net/http"

	"github.com/agent-gateway/agent-gateway/store"
)

// revocationVerdict is the decision on a revocation request: what to
// revoke, if anything, or the refusal.
type revocationVerdict struct {
	refusal *oauthError
	// family, or token for an access token outside any family (the admin
	// CLI's), is what ends; both empty: nothing to do, and still 200.
	family, token string
}

// decideRevocation decides RFC 7009 revocation from the stored token
// (found false when no token has that hash) and the authenticated client.
// A token that is unknown, or already dead (revoked, used, of a revoked
// consent) is answered 200 with nothing done, as RFC 7009 §2.2 says; a
// token of another client is refused as unauthorized_client (the server
// verifies the token was issued to the client, RFC 7009 §2.1), and stays
// valid.
// Revoking either token of an authorization revokes its whole family:
// the authorization ends.
func decideRevocation(t store.TokenRecord, found bool, clientID string) revocationVerdict {
	switch {
	case !found, t.Revoked, t.Used, t.Consent.RevokedAt != nil:
		return revocationVerdict{}
	case t.Consent.ClientID != clientID:
		return revocationVerdict{refusal: refuse(codeUnauthorizedClient, "the token was not issued to this client")}
	case t.FamilyID != "":
		return revocationVerdict{family: t.FamilyID}
	}
	return revocationVerdict{token: t.Hash}
}

// revoke is /oauth/revoke (RFC 7009).
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || len(r.PostForm) == 0 {
		s.writeRefusal(w, "revocation refused", refuse(codeInvalidRequest, "The request body is not a form, or is empty."))
		return
	}
	cl, err := s.authenticateClient(r)
	if err != nil {
		s.writeRefusal(w, "revocation refused", err)
		return
	}
	ctx := r.Context()
	t, err := s.cfg.Store.GetToken(ctx, store.HashToken(r.PostForm.Get("token")))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.writeRefusal(w, "revocation failed", unavailable(err))
		return
	}
	v := decideRevocation(t, err == nil, cl.id)
	if v.refusal != nil {
		s.writeRefusal(w, "revocation refused", v.refusal)
		return
	}
	if err := s.endTokens(r, v.family, v.token); err != nil {
		s.writeRefusal(w, "revocation failed", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(http.StatusOK)
}
