package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// The token endpoint (RFC 6749 §3.2) for public clients: the
// authorization_code grant with PKCE S256 (RFC 7636), and the
// refresh_token grant with rotation, reuse detection and narrowing
// (RFC 6749 §6, RFC 9700 §4.14.2). Each grant reads its rows, asks its
// decision, and carries out the effects the decision names (a family to
// revoke, a challenge to burn) before it renders; the redemption and the
// rotation themselves are the store's, one transaction each.

// tokenRequest is the form of a token request.
type tokenRequest struct {
	grantType    string
	code         string
	codeVerifier string
	redirectURI  string
	refreshToken string
	scope        []string
}

// codeVerdict is the decision on an authorization_code grant.
type codeVerdict struct {
	refusal *oauthError
	// revokeFamily is set when the code was redeemed before: whoever
	// presents it again may have stolen it, so every token it gave is
	// revoked (RFC 6749 §4.1.2).
	revokeFamily string
	// burnChallenge is set after a verification attempt that failed: the
	// challenge goes, so a verifier cannot be guessed twice.
	burnChallenge bool
}

// verifierChars are the characters of an RFC 7636 §4.1 code verifier.
var verifierChars = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// decideCodeExchange decides a code exchange from the stored code (found
// false when no code has that hash) and the authenticated client, in the
// order RFC 6749 §4.1.3 lists the checks: the code is valid, unused and
// unexpired, issued to this client, for this redirect URI; then the PKCE
// verifier against the stored S256 challenge.
func decideCodeExchange(req tokenRequest, c store.AuthorizationCode, found bool, clientID string, now time.Time) codeVerdict {
	invalid := func(d string) codeVerdict { return codeVerdict{refusal: refuse(codeInvalidGrant, d)} }
	switch {
	case !found:
		return invalid("The authorization code is not valid.")
	case c.UsedAt != nil:
		return codeVerdict{refusal: refuse(codeInvalidGrant, "The authorization code has already been used."), revokeFamily: c.RequestID}
	case c.ExpiresAt.IsZero() || !now.Before(c.ExpiresAt):
		return invalid("The authorization code expired.")
	case c.ClientID != clientID:
		return invalid("The client ID of this request does not match the one of the authorization request.")
	case c.RedirectURI != "" && c.RedirectURI != req.redirectURI:
		return invalid("The redirect_uri of this request does not match the one of the authorization request.")
	case c.CodeChallenge == "" && req.codeVerifier == "":
		return codeVerdict{refusal: refuse(codeInvalidRequest, "PKCE is required: the authorization request had no code challenge.")}
	case c.CodeChallenge == "":
		return invalid("The code challenge of this authorization code is gone: a verifier was tried before.")
	}
	burnt := func(d string) codeVerdict {
		return codeVerdict{refusal: refuse(codeInvalidGrant, d), burnChallenge: true}
	}
	if c.CodeChallengeMethod != "S256" {
		return burnt("The code challenge method is not S256.")
	}
	if !verifierChars.MatchString(req.codeVerifier) {
		return burnt("The PKCE code verifier must be 43 to 128 characters of [A-Za-z0-9._~-].")
	}
	sum := sha256.Sum256([]byte(req.codeVerifier))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.CodeChallenge)) != 1 {
		return burnt("The PKCE code challenge did not match the code verifier.")
	}
	return codeVerdict{}
}

// refreshVerdict is the decision on a refresh_token grant.
type refreshVerdict struct {
	refusal *oauthError
	// revokeFamily (or revokeToken, for a token outside any family) is set
	// when a used refresh token comes back: reuse means one of two parties
	// holds a stolen token, so the whole authorization ends
	// (RFC 9700 §4.14.2).
	revokeFamily, revokeToken string
	// scopes are the new access token's; narrowed says they are fewer than
	// the refresh token holds.
	scopes   []string
	narrowed bool
}

// decideRefresh decides a refresh from the stored token (found false when
// no token has that hash), the authenticated client and the scopes this
// server serves: the token is a refresh token, unused, unrevoked, of an
// active consent, unexpired and the client's; every scope it holds is
// still served; the scopes asked for, if any, are among those it holds
// (a refresh narrows, never widens).
func decideRefresh(req tokenRequest, t store.TokenRecord, found bool, clientID string, served []string, now time.Time) refreshVerdict {
	invalid := func(d string) refreshVerdict { return refreshVerdict{refusal: refuse(codeInvalidGrant, d)} }
	switch {
	case !found || t.Kind != store.TokenRefresh:
		return invalid("The refresh token is malformed or not valid.")
	case t.Used:
		v := invalid("The refresh token was already used.")
		if t.FamilyID != "" {
			v.revokeFamily = t.FamilyID
		} else {
			v.revokeToken = t.Hash
		}
		return v
	case t.Revoked || t.Consent.RevokedAt != nil:
		return invalid("The refresh token is malformed or not valid.")
	case !now.Before(t.ExpiresAt):
		return invalid("The refresh token expired.")
	case t.Consent.ClientID != clientID:
		return invalid("The client ID of this request does not match the one the token was issued to.")
	}
	held := t.Scopes
	for _, sc := range held {
		if !slices.Contains(served, sc) {
			return refreshVerdict{refusal: refuse(codeInvalidScope, "The token holds scope "+quoteScope(sc)+", which this server no longer serves.")}
		}
	}
	if len(req.scope) == 0 {
		return refreshVerdict{scopes: held}
	}
	for _, sc := range req.scope {
		if !slices.Contains(held, sc) {
			return refreshVerdict{refusal: refuse(codeInvalidScope,
				"The refresh token does not include scope "+quoteScope(sc)+"; a wider scope needs a new authorization and consent.")}
		}
	}
	asked := slices.Clone(req.scope)
	slices.Sort(asked)
	asked = slices.Compact(asked)
	if len(asked) == len(held) {
		return refreshVerdict{scopes: held}
	}
	return refreshVerdict{scopes: asked, narrowed: true}
}

func quoteScope(sc string) string { return "'" + sc + "'" }

// readTokenRequest parses the form of a token request and checks what
// every grant shares: a form, the RFC 8707 resource (each one sent must be
// the one resource this server serves) and one supported grant type.
func (s *Server) readTokenRequest(r *http.Request) (tokenRequest, *oauthError) {
	if err := r.ParseForm(); err != nil {
		return tokenRequest{}, refuse(codeInvalidRequest, "The request body is not a form.")
	}
	f := r.PostForm
	for _, v := range f["resource"] {
		if !s.isResource(v) {
			return tokenRequest{}, errInvalidTarget(s.cfg.Resource)
		}
	}
	if len(f) == 0 {
		return tokenRequest{}, refuse(codeInvalidRequest, "The POST body can not be empty.")
	}
	grant := strings.Fields(f.Get("grant_type"))
	if len(grant) == 0 {
		return tokenRequest{}, refuse(codeInvalidRequest, "Request parameter 'grant_type' is missing.")
	}
	if len(grant) != 1 || (grant[0] != "authorization_code" && grant[0] != "refresh_token") {
		return tokenRequest{}, refuse(codeInvalidRequest, "The grant type is not supported: use authorization_code or refresh_token.")
	}
	return tokenRequest{
		grantType: grant[0], code: f.Get("code"), codeVerifier: f.Get("code_verifier"),
		redirectURI: f.Get("redirect_uri"), refreshToken: f.Get("refresh_token"), scope: strings.Fields(f.Get("scope")),
	}, nil
}

// token is /oauth/token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	req, e := s.readTokenRequest(r)
	if e != nil {
		s.writeRefusal(w, "token request refused", e)
		return
	}
	cl, err := s.authenticateClient(r)
	if err != nil {
		s.writeRefusal(w, "token request refused", err)
		return
	}
	if req.grantType == "authorization_code" {
		err = s.exchangeCode(w, r, req, cl)
	} else {
		err = s.refresh(w, r, req, cl)
	}
	if err != nil {
		s.writeRefusal(w, "token request refused", err)
	}
}

// exchangeCode carries out an authorization_code grant: one read of the
// code, the decision, and the store's redemption, which marks the code
// used and stores the tokens in one transaction (of two concurrent
// exchanges, one wins; the other is a replay).
func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, req tokenRequest, cl client) error {
	ctx := r.Context()
	hash := store.HashToken(req.code)
	c, err := s.cfg.Store.GetAuthorizationCode(ctx, hash)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return unavailable(err)
	}
	now := time.Now()
	v := decideCodeExchange(req, c, found, cl.id, now)
	if v.revokeFamily != "" {
		if err := s.cfg.Store.RevokeTokenFamily(ctx, v.revokeFamily); err != nil {
			return unavailable(err)
		}
	}
	if v.burnChallenge {
		if err := s.cfg.Store.ClearCodeChallenge(ctx, hash); err != nil {
			return unavailable(err)
		}
	}
	if v.refusal != nil {
		return v.refusal
	}
	t, err := s.issue(now, nil)
	if err != nil {
		return err
	}
	switch err := s.cfg.Store.RedeemAuthorizationCode(ctx, hash, t.rows...); {
	case errors.Is(err, store.ErrTokenReused):
		if rerr := s.cfg.Store.RevokeTokenFamily(ctx, c.RequestID); rerr != nil {
			return unavailable(rerr)
		}
		return refuse(codeInvalidGrant, "The authorization code has already been used.")
	case errors.Is(err, store.ErrNotFound):
		return refuse(codeInvalidGrant, "The authorization code is not valid: its consent was revoked.")
	case err != nil:
		return unavailable(err)
	}
	writeTokens(w, t, c.Scopes)
	return nil
}

// refresh carries out a refresh_token grant: one read of the token, the
// decision, and the store's rotation, which marks the token used, retires
// the family's earlier access tokens and stores the new pair in one
// transaction (of two concurrent rotations, one wins; the other is reuse).
func (s *Server) refresh(w http.ResponseWriter, r *http.Request, req tokenRequest, cl client) error {
	ctx := r.Context()
	hash := store.HashToken(req.refreshToken)
	t, err := s.cfg.Store.GetToken(ctx, hash)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return unavailable(err)
	}
	now := time.Now()
	v := decideRefresh(req, t, found, cl.id, s.scopeNames(), now)
	if err := s.endTokens(r, v.revokeFamily, v.revokeToken); err != nil {
		return err
	}
	if v.refusal != nil {
		return v.refusal
	}
	var own []string
	if v.narrowed {
		own = v.scopes
	}
	tk, err := s.issue(now, own)
	if err != nil {
		return err
	}
	switch err := s.cfg.Store.RotateRefreshTokenHash(ctx, hash, tk.rows...); {
	case errors.Is(err, store.ErrTokenReused):
		if err := s.endTokens(r, t.FamilyID, ""); err != nil {
			return err
		}
		return refuse(codeInvalidGrant, "The refresh token was already used.")
	case errors.Is(err, store.ErrNotFound):
		return refuse(codeInvalidGrant, "The refresh token is malformed or not valid.")
	case err != nil:
		return unavailable(err)
	}
	writeTokens(w, tk, v.scopes)
	return nil
}

// endTokens revokes what a reuse ends: a family, or a lone token.
func (s *Server) endTokens(r *http.Request, family, token string) error {
	var err error
	switch {
	case family != "":
		err = s.cfg.Store.RevokeTokenFamily(r.Context(), family)
	case token != "":
		err = s.cfg.Store.RevokeTokenHash(r.Context(), token)
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}
