// Package oidcprovider is a real OpenID Connect provider for tests and the
// demo: the OP of github.com/zitadel/oidc/v3 (discovery, authorization code
// flow with PKCE, RS256-signed ID tokens, JWKS) on loopback, with an
// in-memory user store and a plain HTML login form a browser (or a test's
// HTTP client) fills in. Users carry a stable subject, which is what the
// gateway's project memberships name.
//
// It is deliberately not a hand-rolled token signer: the gateway's login
// code is exercised against a conforming provider, so discovery, issuer,
// audience, nonce and signature checks meet real tokens.
package oidcprovider

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is one account of the provider.
type User struct {
	// Subject is the stable sub claim.
	Subject  string
	Username string
	Password string
	Email    string
	Name     string
}

// Client is a relying party registered at the provider.
type Client struct {
	ID string
	// Secret empty makes a public client (token endpoint auth "none").
	Secret       string
	RedirectURIs []string
}

// Options configure a provider.
type Options struct {
	Users   []User
	Clients []Client
	// Addr is the loopback host:port to listen on; empty picks a free port.
	Addr string
	// Logger receives the OP's logs; nil discards them.
	Logger *slog.Logger
}

// Provider is a running OpenID provider.
type Provider struct {
	issuer  string
	server  *http.Server
	ln      net.Listener
	storage *storage
}

// Start listens on loopback and serves the provider until Close.
func Start(o Options) (*Provider, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	issuer := "http://" + ln.Addr().String()
	st, err := newStorage(o.Users, o.Clients)
	if err != nil {
		ln.Close()
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		ln.Close()
		return nil, err
	}
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:                key,
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		DefaultLogoutRedirectURI: "/",
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(logger))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("oidcprovider: %w", err)
	}
	r := chi.NewRouter()
	l := &login{storage: st, callback: op.AuthCallbackURL(provider)}
	intercept := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	r.Get(loginPath, l.form)
	r.Post(loginPath, intercept.HandlerFunc(l.submit))
	r.Mount("/", provider)
	p := &Provider{issuer: issuer, ln: ln, storage: st, server: &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = p.server.Serve(ln) }()
	return p, nil
}

// Issuer is the provider's issuer URL (http://127.0.0.1:port).
func (p *Provider) Issuer() string { return p.issuer }

// AddClient registers (or replaces) a relying party.
func (p *Provider) AddClient(c Client) { p.storage.addClient(c) }

// Close stops the provider.
func (p *Provider) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.server.Shutdown(ctx)
}

// loginPath is the login form; the OP sends browsers here with the
// authorization request's ID.
const loginPath = "/login"

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in — test identity provider</title></head>
<body>
<main>
<h1>Sign in</h1>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<input type="hidden" name="id" value="{{.ID}}">
<p><label for="username">Username</label> <input id="username" name="username" autocomplete="username" required></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit" id="sign-in">Sign in</button></p>
</form>
</main>
</body>
</html>
`))

type login struct {
	storage  *storage
	callback func(context.Context, string) string
}

func (l *login) form(w http.ResponseWriter, r *http.Request) {
	l.render(w, http.StatusOK, r.URL.Query().Get("authRequestID"), "")
}

func (l *login) render(w http.ResponseWriter, status int, id, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, struct{ ID, Error string }{id, msg})
}

func (l *login) submit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id := r.PostForm.Get("id")
	if err := l.storage.authenticate(id, r.PostForm.Get("username"), r.PostForm.Get("password")); err != nil {
		l.render(w, http.StatusUnauthorized, id, err.Error())
		return
	}
	http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
}

// storage is the OP's in-memory state: users, clients, authorization
// requests and their codes, and the access tokens it issued.
type storage struct {
	mu       sync.Mutex
	users    map[string]User // by username
	clients  map[string]*client
	requests map[string]*authRequest
	codes    map[string]string // code → request ID
	tokens   map[string]*accessToken
	key      *rsa.PrivateKey
	keyID    string
	// requestOrder are the IDs of requests in the order they were made
	// (some since deleted), to drop the oldest past maxHeld.
	requestOrder []string
}

// maxHeld bounds the authorization requests and the access tokens the
// provider holds: the demo runs it for as long as a person leaves it up,
// and a login that is never finished left its request behind for good.
// Past the bound the oldest request, and the expired tokens (else any
// one), go.
const maxHeld = 10000

var _ op.Storage = (*storage)(nil)

func newStorage(users []User, clients []Client) (*storage, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &storage{
		users: map[string]User{}, clients: map[string]*client{}, requests: map[string]*authRequest{},
		codes: map[string]string{}, tokens: map[string]*accessToken{}, key: key, keyID: rand.Text(),
	}
	for _, u := range users {
		if u.Subject == "" || u.Username == "" {
			return nil, fmt.Errorf("oidcprovider: user %+v needs a subject and a username", u)
		}
		s.users[u.Username] = u
	}
	for _, c := range clients {
		s.addClient(c)
	}
	return s, nil
}

func (s *storage) addClient(c Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c.ID] = &client{Client: c}
}

func (s *storage) authenticate(id, username, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.requests[id]
	if !ok {
		return errors.New("this sign-in request is unknown or expired")
	}
	u, ok := s.users[username]
	if !ok || u.Password != password {
		return errors.New("wrong username or password")
	}
	req.subject, req.done, req.authTime = u.Subject, true, time.Now()
	return nil
}

func (s *storage) userBySubject(sub string) (User, bool) {
	for _, u := range s.users {
		if u.Subject == sub {
			return u, true
		}
	}
	return User{}, false
}

// authRequest implements op.AuthRequest.
type authRequest struct {
	id, clientID, redirectURI, state, nonce string
	scopes                                  []string
	responseType                            oidc.ResponseType
	responseMode                            oidc.ResponseMode
	challenge                               *oidc.CodeChallenge
	subject                                 string
	done                                    bool
	authTime                                time.Time
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// accessToken is an opaque access token the OP issued (for userinfo).
type accessToken struct {
	subject, clientID string
	scopes            []string
	expires           time.Time
}

// CreateAuthRequest implements op.AuthStorage.
func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if slices.Contains(r.Prompt, oidc.PromptNone) {
		return nil, oidc.ErrLoginRequired()
	}
	a := &authRequest{
		id: rand.Text(), clientID: r.ClientID, redirectURI: r.RedirectURI, state: r.State, nonce: r.Nonce,
		scopes: r.Scopes, responseType: r.ResponseType, responseMode: r.ResponseMode,
	}
	if r.CodeChallenge != "" {
		a.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[a.id] = a
	s.requestOrder = append(s.requestOrder, a.id)
	for len(s.requests) > maxHeld {
		oldest := s.requestOrder[0]
		s.requestOrder = s.requestOrder[1:]
		s.deleteAuthRequest(oldest)
	}
	if len(s.requestOrder) > 2*maxHeld { // forget the IDs of deleted requests
		s.requestOrder = slices.DeleteFunc(slices.Clone(s.requestOrder), func(id string) bool { return s.requests[id] == nil })
	}
	return a, nil
}

// AuthRequestByID implements op.AuthStorage.
func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.requests[id]; ok {
		return a, nil
	}
	return nil, errors.New("auth request not found")
}

// AuthRequestByCode implements op.AuthStorage.
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("code invalid or expired")
	}
	return s.AuthRequestByID(ctx, id)
}

// SaveAuthCode implements op.AuthStorage.
func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest implements op.AuthStorage: a code works once.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteAuthRequest(id)
	return nil
}

// deleteAuthRequest forgets a request and its codes; s.mu is held.
func (s *storage) deleteAuthRequest(id string) {
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
}

// CreateAccessToken implements op.AuthStorage.
func (s *storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	var clientID string
	if a, ok := r.(*authRequest); ok {
		clientID = a.clientID
	}
	t := &accessToken{subject: r.GetSubject(), clientID: clientID, scopes: r.GetScopes(), expires: time.Now().Add(5 * time.Minute)}
	id := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[id] = t
	if len(s.tokens) > maxHeld {
		now := time.Now()
		for tid, old := range s.tokens {
			if now.After(old.expires) || (len(s.tokens) > maxHeld && tid != id) {
				delete(s.tokens, tid)
			}
		}
	}
	return id, t.expires, nil
}

// CreateAccessAndRefreshTokens implements op.AuthStorage; this provider
// issues no refresh tokens (its clients are not allowed the grant).
func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("refresh tokens are not issued")
}

// TokenRequestByRefreshToken implements op.AuthStorage.
func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

// TerminateSession implements op.AuthStorage.
func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

// RevokeToken implements op.AuthStorage.
func (s *storage) RevokeToken(_ context.Context, token, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[token]; ok && t.clientID == clientID {
		delete(s.tokens, token)
	}
	return nil
}

// GetRefreshTokenInfo implements op.AuthStorage.
func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

// SigningKey implements op.AuthStorage.
func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return signingKey{s.keyID, s.key}, nil
}

// SignatureAlgorithms implements op.AuthStorage.
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

// KeySet implements op.AuthStorage.
func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{signingKey{s.keyID, s.key}}}, nil
}

// GetClientByClientID implements op.OPStorage.
func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		return c, nil
	}
	return nil, errors.New("client not found")
}

// AuthorizeClientIDSecret implements op.OPStorage.
func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || c.Secret == "" || c.Secret != secret {
		return errors.New("invalid client credentials")
	}
	return nil
}

// SetUserinfoFromScopes implements op.OPStorage; SetUserinfoFromRequest
// does the work.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest implements op.CanSetUserinfoFromRequest.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	return s.setUserinfo(info, r.GetSubject(), scopes)
}

func (s *storage) setUserinfo(info *oidc.UserInfo, subject string, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.userBySubject(subject)
	if !ok {
		return errors.New("user not found")
	}
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeOpenID:
			info.Subject = u.Subject
		case oidc.ScopeEmail:
			info.Email, info.EmailVerified = u.Email, true
		case oidc.ScopeProfile:
			info.Name, info.PreferredUsername = u.Name, u.Username
		}
	}
	return nil
}

// SetUserinfoFromToken implements op.OPStorage.
func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expires) {
		return errors.New("token is not valid")
	}
	return s.setUserinfo(info, t.subject, t.scopes)
}

// SetIntrospectionFromToken implements op.OPStorage.
func (s *storage) SetIntrospectionFromToken(_ context.Context, r *oidc.IntrospectionResponse, tokenID, _, clientID string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || t.clientID != clientID {
		return errors.New("token is not valid for this client")
	}
	r.Active, r.Subject, r.ClientID, r.Scope = true, t.subject, t.clientID, t.scopes
	return nil
}

// GetPrivateClaimsFromScopes implements op.OPStorage.
func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetKeyByIDAndClientID implements op.OPStorage (JWT client auth is off).
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("JWT client authentication is not supported")
}

// ValidateJWTProfileScopes implements op.OPStorage.
func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

// Health implements op.Storage.
func (s *storage) Health(context.Context) error { return nil }

// client implements op.Client.
type client struct{ Client }

func (c *client) GetID() string                    { return c.ID }
func (c *client) RedirectURIs() []string           { return c.Client.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return nil }
func (c *client) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeWeb
}
func (c *client) AuthMethod() oidc.AuthMethod {
	if c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *client) LoginURL(id string) string    { return loginPath + "?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType {
	return op.AccessTokenTypeBearer
}
func (c *client) IDTokenLifetime() time.Duration { return 5 * time.Minute }

// DevMode allows the http:// loopback redirect URIs tests use.
func (c *client) DevMode() bool { return true }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
