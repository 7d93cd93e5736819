package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/pkce"
	"github.com/ory/fosite/storage"

	"github.com/agent-gateway/agent-gateway/store"
)

// This file adapts fosite to the gateway's store. fosite runs the OAuth
// protocol (request parsing and validation, PKCE, code and refresh grants,
// rotation with reuse detection, revocation); the adapter maps its
// "sessions" onto the store's rows:
//
//   - an authorization request ID is a token family: the code row carries
//     it, and every access and refresh token redeemed from the code, and
//     every rotation after, is stored with family_id = that ID;
//   - the session carries the consent (project, subject, scopes) the user
//     consented to, which is what the documents endpoint resolves a token to;
//   - fosite's "transaction" (BeginTX … Commit) is collected in the context
//     and executed as one store call: redeeming a code or rotating a refresh
//     token and storing the new tokens happen atomically, or not at all.

// codePrefix marks authorization codes (agw_at_/agw_rt_ are the tokens').
const codePrefix = "agw_ac_"

// session is fosite's per-authorization state: the consent behind it and the
// expiry of each token kind.
type session struct {
	ConsentID string
	ProjectID string
	Subject   string
	Expires   map[fosite.TokenType]time.Time
	// AccessScopes, set by a refresh that narrows (see narrow), are the
	// scopes of the access token being issued; nil keeps the refresh
	// token's.
	AccessScopes []string
}

var _ fosite.Session = (*session)(nil)

func (s *session) SetExpiresAt(kind fosite.TokenType, exp time.Time) {
	if s.Expires == nil {
		s.Expires = map[fosite.TokenType]time.Time{}
	}
	s.Expires[kind] = exp
}

func (s *session) GetExpiresAt(kind fosite.TokenType) time.Time { return s.Expires[kind] }
func (s *session) GetUsername() string                          { return "" }
func (s *session) GetSubject() string                           { return s.Subject }

func (s *session) Clone() fosite.Session {
	c := *s
	c.AccessScopes = slices.Clone(s.AccessScopes)
	c.Expires = make(map[fosite.TokenType]time.Time, len(s.Expires))
	for k, v := range s.Expires {
		c.Expires[k] = v
	}
	return &c
}

// hydrate fills the session fosite passed with the consent and one token
// kind's expiry, keeping the expiries fosite already set (it reads a code's
// expiry from the access request's own session object, and loads the code
// again after setting the new tokens' expiries). Without a session from
// fosite, it returns a new one.
func hydrate(dst fosite.Session, g store.Consent, kind fosite.TokenType, exp time.Time) *session {
	s, ok := dst.(*session)
	if !ok || s == nil {
		s = &session{}
	}
	s.ConsentID, s.ProjectID, s.Subject = g.ID, g.ProjectID, g.Subject
	s.SetExpiresAt(kind, exp)
	return s
}

// opaqueStrategy generates codes and tokens as prefixed 256-bit random
// strings (store.NewToken) whose "signature" — the key fosite stores them
// under — is the store's SHA-256 hash, so secrets are never stored.
type opaqueStrategy struct{}

var _ oauth2.CoreStrategy = opaqueStrategy{}

func generate(prefix string) (string, string, error) {
	t, err := store.NewToken(prefix)
	if err != nil {
		return "", "", err
	}
	return t, store.HashToken(t), nil
}

// validate checks a token's kind by prefix and its expiry by the session.
func validate(r fosite.Requester, kind fosite.TokenType, prefix, token string) error {
	if !strings.HasPrefix(token, prefix) {
		return fosite.ErrInvalidTokenFormat
	}
	exp := r.GetSession().GetExpiresAt(kind)
	if exp.IsZero() || !time.Now().Before(exp) {
		return fosite.ErrTokenExpired.WithHintf("The %s expired at %s.", kind, exp.UTC().Format(time.RFC3339))
	}
	return nil
}

func (opaqueStrategy) AccessTokenSignature(_ context.Context, token string) string {
	return store.HashToken(token)
}
func (opaqueStrategy) GenerateAccessToken(context.Context, fosite.Requester) (string, string, error) {
	return generate(store.AccessTokenPrefix)
}
func (opaqueStrategy) ValidateAccessToken(_ context.Context, r fosite.Requester, token string) error {
	return validate(r, fosite.AccessToken, store.AccessTokenPrefix, token)
}
func (opaqueStrategy) RefreshTokenSignature(_ context.Context, token string) string {
	return store.HashToken(token)
}
func (opaqueStrategy) GenerateRefreshToken(context.Context, fosite.Requester) (string, string, error) {
	return generate(store.RefreshTokenPrefix)
}
func (opaqueStrategy) ValidateRefreshToken(_ context.Context, r fosite.Requester, token string) error {
	return validate(r, fosite.RefreshToken, store.RefreshTokenPrefix, token)
}
func (opaqueStrategy) AuthorizeCodeSignature(_ context.Context, token string) string {
	return store.HashToken(token)
}
func (opaqueStrategy) GenerateAuthorizeCode(context.Context, fosite.Requester) (string, string, error) {
	return generate(codePrefix)
}
func (opaqueStrategy) ValidateAuthorizeCode(_ context.Context, r fosite.Requester, token string) error {
	return validate(r, fosite.AuthorizeCode, codePrefix, token)
}

// fositeStore implements fosite's storage interfaces over the store.
type fositeStore struct {
	st Store
	// scopes are every scope a client may ask for.
	scopes []string
	// cimd fetches client metadata documents; nil when they are off.
	cimd *metadataFetcher
}

var (
	_ fosite.ClientManager          = (*fositeStore)(nil)
	_ oauth2.CoreStorage            = (*fositeStore)(nil)
	_ oauth2.TokenRevocationStorage = (*fositeStore)(nil)
	_ pkce.PKCERequestStorage       = (*fositeStore)(nil)
	_ storage.Transactional         = (*fositeStore)(nil)
)

// pending is one fosite transaction: a code to redeem or a refresh token to
// rotate, and the tokens to store with it.
type pending struct {
	redeemCode    string
	rotateRefresh string
	family        string
	tokens        []store.HashedToken
}

type pendingKey struct{}

func pendingFrom(ctx context.Context) *pending {
	p, _ := ctx.Value(pendingKey{}).(*pending)
	return p
}

// errOutsideTx reports a fosite write the adapter only supports inside a
// transaction (every flow this server enables writes tokens in one).
var errOutsideTx = errors.New("oauth: token write outside a transaction")

// BeginTX implements storage.Transactional.
func (f *fositeStore) BeginTX(ctx context.Context) (context.Context, error) {
	return context.WithValue(ctx, pendingKey{}, &pending{}), nil
}

// Commit implements storage.Transactional: the collected writes in one
// store transaction. Losing a race for a code or refresh token is reuse:
// the family is revoked, as if the loser had come second.
func (f *fositeStore) Commit(ctx context.Context) error {
	p := pendingFrom(ctx)
	if p == nil {
		return errOutsideTx
	}
	defer func() { *p = pending{} }()
	switch {
	case p.redeemCode != "":
		err := f.st.RedeemAuthorizationCode(ctx, p.redeemCode, p.tokens...)
		if errors.Is(err, store.ErrTokenReused) {
			if c, gerr := f.st.GetAuthorizationCode(ctx, p.redeemCode); gerr == nil {
				err = errors.Join(err, f.st.RevokeTokenFamily(ctx, c.RequestID))
			}
			return fmt.Errorf("%w: %w", fosite.ErrInvalidatedAuthorizeCode, err)
		}
		return err
	case p.rotateRefresh != "":
		err := f.st.RotateRefreshTokenHash(ctx, p.rotateRefresh, p.tokens...)
		if errors.Is(err, store.ErrTokenReused) {
			return fmt.Errorf("%w: %w", fosite.ErrInactiveToken, errors.Join(err, f.st.RevokeTokenFamily(ctx, p.family)))
		}
		return err
	case len(p.tokens) > 0:
		return errors.New("oauth: tokens issued without a code or refresh token")
	}
	return nil
}

// Rollback implements storage.Transactional.
func (f *fositeStore) Rollback(ctx context.Context) error {
	if p := pendingFrom(ctx); p != nil {
		*p = pending{}
	}
	return nil
}

// notFound maps the store's ErrNotFound to fosite's.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", fosite.ErrNotFound, err)
	}
	return err
}

// GetClient implements fosite.ClientManager: registered clients are public
// (PKCE, no secret) and may ask for every scope the gateway knows.
func (f *fositeStore) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	if isMetadataURL(id) {
		if f.cimd == nil {
			return nil, fmt.Errorf("%w: client metadata documents are off", fosite.ErrNotFound)
		}
		doc, err := f.cimd.get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", fosite.ErrNotFound, err)
		}
		return f.client(doc.ClientID, doc.RedirectURIs), nil
	}
	c, err := f.st.GetClient(ctx, id)
	if err != nil {
		return nil, notFound(err)
	}
	return f.client(c.ClientID, c.RedirectURIs), nil
}

func (f *fositeStore) client(id string, redirectURIs []string) *fosite.DefaultClient {
	return &fosite.DefaultClient{
		ID: id, RedirectURIs: redirectURIs, Public: true, Scopes: f.scopes,
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
	}
}

// clientOrStub returns the registered client, or a bare public client with
// that ID for consents made outside the registration (admin create-consent):
// enough for fosite to compare client IDs on revocation.
func (f *fositeStore) clientOrStub(ctx context.Context, id string) (fosite.Client, error) {
	if isMetadataURL(id) {
		if c, err := f.GetClient(ctx, id); err == nil {
			return c, nil
		}
		return f.client(id, nil), nil
	}
	c, err := f.st.GetClient(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return f.client(id, nil), nil
	}
	if err != nil {
		return nil, err
	}
	return f.client(c.ClientID, c.RedirectURIs), nil
}

// ClientAssertionJWTValid implements fosite.ClientManager; public clients
// send no assertions.
func (f *fositeStore) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT implements fosite.ClientManager.
func (f *fositeStore) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

// CreateAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage.
func (f *fositeStore) CreateAuthorizeCodeSession(ctx context.Context, signature string, r fosite.Requester) error {
	s, ok := r.GetSession().(*session)
	if !ok || s.ConsentID == "" {
		return errors.New("oauth: authorization without a consent")
	}
	return f.st.CreateAuthorizationCode(ctx, store.AuthorizationCode{
		CodeHash: signature, RequestID: r.GetID(), ConsentID: s.ConsentID, ClientID: r.GetClient().GetID(),
		RedirectURI: r.GetRequestForm().Get("redirect_uri"), Scopes: r.GetGrantedScopes(),
		RequestedAt: r.GetRequestedAt(), ExpiresAt: s.GetExpiresAt(fosite.AuthorizeCode),
	})
}

// GetAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage. A used
// code comes back with its request and ErrInvalidatedAuthorizeCode, so
// fosite revokes the family it started.
func (f *fositeStore) GetAuthorizeCodeSession(ctx context.Context, signature string, sess fosite.Session) (fosite.Requester, error) {
	c, err := f.st.GetAuthorizationCode(ctx, signature)
	if err != nil {
		return nil, notFound(err)
	}
	g, err := f.st.GetConsent(ctx, c.ConsentID)
	if err != nil {
		return nil, notFound(err)
	}
	if g.RevokedAt != nil {
		return nil, fmt.Errorf("%w: the consent was revoked", fosite.ErrNotFound)
	}
	client, err := f.clientOrStub(ctx, c.ClientID)
	if err != nil {
		return nil, err
	}
	s := hydrate(sess, g, fosite.AuthorizeCode, c.ExpiresAt)
	req := &fosite.Request{
		ID: c.RequestID, RequestedAt: c.RequestedAt, Client: client,
		RequestedScope: c.Scopes, GrantedScope: c.Scopes,
		RequestedAudience: fosite.Arguments{}, GrantedAudience: fosite.Arguments{},
		Form: url.Values{"redirect_uri": {c.RedirectURI}}, Session: s,
	}
	if c.UsedAt != nil {
		return req, fosite.ErrInvalidatedAuthorizeCode
	}
	return req, nil
}

// InvalidateAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage:
// the code is marked used at Commit, with the tokens.
func (f *fositeStore) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	p := pendingFrom(ctx)
	if p == nil {
		return errOutsideTx
	}
	p.redeemCode = signature
	return nil
}

// CreatePKCERequestSession implements pkce.PKCERequestStorage: the
// challenge is bound to the code's row.
func (f *fositeStore) CreatePKCERequestSession(ctx context.Context, signature string, r fosite.Requester) error {
	form := r.GetRequestForm()
	return f.st.SetCodeChallenge(ctx, signature, form.Get("code_challenge"), form.Get("code_challenge_method"))
}

// GetPKCERequestSession implements pkce.PKCERequestStorage.
func (f *fositeStore) GetPKCERequestSession(ctx context.Context, signature string, sess fosite.Session) (fosite.Requester, error) {
	c, err := f.st.GetAuthorizationCode(ctx, signature)
	if err != nil {
		return nil, notFound(err)
	}
	if c.CodeChallenge == "" {
		return nil, fmt.Errorf("%w: no code challenge", fosite.ErrNotFound)
	}
	client, err := f.clientOrStub(ctx, c.ClientID)
	if err != nil {
		return nil, err
	}
	return &fosite.Request{
		ID: c.RequestID, Client: client, Session: sess,
		Form: url.Values{"code_challenge": {c.CodeChallenge}, "code_challenge_method": {c.CodeChallengeMethod}},
	}, nil
}

// DeletePKCERequestSession implements pkce.PKCERequestStorage: after one
// verification attempt the challenge is gone, so a wrong verifier burns
// the code.
func (f *fositeStore) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return f.st.ClearCodeChallenge(ctx, signature)
}

func (f *fositeStore) queue(ctx context.Context, t store.HashedToken) error {
	p := pendingFrom(ctx)
	if p == nil {
		return errOutsideTx
	}
	p.tokens = append(p.tokens, t)
	return nil
}

// CreateAccessTokenSession implements oauth2.AccessTokenStorage; a
// narrowing refresh gives the token its own scopes.
func (f *fositeStore) CreateAccessTokenSession(ctx context.Context, signature string, r fosite.Requester) error {
	t := store.HashedToken{Hash: signature, Kind: store.TokenAccess, ExpiresAt: r.GetSession().GetExpiresAt(fosite.AccessToken)}
	if s, ok := r.GetSession().(*session); ok && s.AccessScopes != nil {
		t.Scopes = s.AccessScopes
	}
	return f.queue(ctx, t)
}

// CreateRefreshTokenSession implements oauth2.RefreshTokenStorage: a
// refresh token always keeps the scopes it is issued under (RFC 6749 §6).
func (f *fositeStore) CreateRefreshTokenSession(ctx context.Context, signature, _ string, r fosite.Requester) error {
	return f.queue(ctx, store.HashedToken{Hash: signature, Kind: store.TokenRefresh, ExpiresAt: r.GetSession().GetExpiresAt(fosite.RefreshToken)})
}

// loneRequest is the request ID of an access token outside any family
// (admin issue-access-token): revoking it revokes that token alone.
const loneRequest = "token:"

// tokenSession loads a token as fosite's request. Revoked tokens and tokens
// of revoked consents are not found; a used refresh token comes back with
// ErrInactiveToken so fosite treats its presentation as reuse.
func (f *fositeStore) tokenSession(ctx context.Context, signature string, kind store.TokenKind, sess fosite.Session) (fosite.Requester, error) {
	t, err := f.st.GetToken(ctx, signature)
	if err != nil {
		return nil, notFound(err)
	}
	if t.Kind != kind {
		return nil, fmt.Errorf("%w: not a %s token", fosite.ErrNotFound, kind)
	}
	client, err := f.clientOrStub(ctx, t.Consent.ClientID)
	if err != nil {
		return nil, err
	}
	fk := fosite.AccessToken
	if kind == store.TokenRefresh {
		fk = fosite.RefreshToken
	}
	s := hydrate(sess, t.Consent, fk, t.ExpiresAt)
	id := t.FamilyID
	if id == "" {
		id = loneRequest + signature
	}
	req := &fosite.Request{
		ID: id, RequestedAt: t.CreatedAt, Client: client,
		RequestedScope: t.Scopes, GrantedScope: t.Scopes,
		RequestedAudience: fosite.Arguments{}, GrantedAudience: fosite.Arguments{},
		Form: url.Values{}, Session: s,
	}
	switch {
	case t.Used:
		return req, fosite.ErrInactiveToken
	case t.Revoked:
		return nil, fmt.Errorf("%w: revoked", fosite.ErrNotFound)
	case t.Consent.RevokedAt != nil:
		return nil, fmt.Errorf("%w: consent revoked", fosite.ErrNotFound)
	}
	return req, nil
}

// GetAccessTokenSession implements oauth2.AccessTokenStorage.
func (f *fositeStore) GetAccessTokenSession(ctx context.Context, signature string, sess fosite.Session) (fosite.Requester, error) {
	return f.tokenSession(ctx, signature, store.TokenAccess, sess)
}

// GetRefreshTokenSession implements oauth2.RefreshTokenStorage.
func (f *fositeStore) GetRefreshTokenSession(ctx context.Context, signature string, sess fosite.Session) (fosite.Requester, error) {
	return f.tokenSession(ctx, signature, store.TokenRefresh, sess)
}

// DeleteAccessTokenSession implements oauth2.AccessTokenStorage.
func (f *fositeStore) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	return f.st.RevokeTokenHash(ctx, signature)
}

// DeleteRefreshTokenSession implements oauth2.RefreshTokenStorage.
func (f *fositeStore) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return f.st.RevokeTokenHash(ctx, signature)
}

// RotateRefreshToken implements oauth2.RefreshTokenStorage: the old token
// is marked used at Commit, with the new tokens.
func (f *fositeStore) RotateRefreshToken(ctx context.Context, requestID, signature string) error {
	p := pendingFrom(ctx)
	if p == nil {
		return errOutsideTx
	}
	p.rotateRefresh, p.family = signature, requestID
	return nil
}

// revoke revokes a family, or one lone access token.
func (f *fositeStore) revoke(ctx context.Context, requestID string) error {
	if h, ok := strings.CutPrefix(requestID, loneRequest); ok {
		return f.st.RevokeTokenHash(ctx, h)
	}
	return f.st.RevokeTokenFamily(ctx, requestID)
}

// RevokeRefreshToken implements oauth2.TokenRevocationStorage.
func (f *fositeStore) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return f.revoke(ctx, requestID)
}

// RevokeAccessToken implements oauth2.TokenRevocationStorage.
func (f *fositeStore) RevokeAccessToken(ctx context.Context, requestID string) error {
	return f.revoke(ctx, requestID)
}
