// Package oauth is the gateway's OAuth 2.1 authorization server for the
// documents endpoint (docs/architecture.md#identity-and-oauth): RFC 8414
// metadata, RFC 7591 dynamic client registration, /oauth/authorize (code +
// PKCE S256, RFC 8707 resource), login at an OpenID Connect identity
// provider, a consent page where the user picks the project, /oauth/token
// (authorization_code, and refresh_token with rotation and reuse detection)
// and /oauth/revoke.
//
// The protocol core is the package's own (authorize.go, token.go,
// revoke.go, outcome.go): each endpoint decides with a pure function of
// the request and the rows it read, and one place renders the outcome as
// an RFC 6749 / 7009 / 8707 error; the atomic parts (redeeming a code,
// rotating a refresh token) are the store's. docs/oauth.md lists the
// RFC 9700 checks and the test of each.
package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/store"
)

// Store is what the authorization server reads and writes.
type Store interface {
	store.AuthorizationServerStore
	GetClient(ctx context.Context, clientID string) (store.Client, error)
	RegisterClient(ctx context.Context, name string, redirectURIs []string) (store.Client, error)
	store.OAuthCapStore
	CreateConsent(ctx context.Context, projectID, subject, clientID string, scopes []string) (store.Consent, error)
	GetConsent(ctx context.Context, consentID string) (store.Consent, error)
}

// Scope is one OAuth scope a client may ask for, with what it allows in
// words the consent page shows.
type Scope struct {
	Name        string
	Description string
}

// Token lifetimes (docs/architecture.md#authorization-server: short-lived,
// codes single-use within 60 s).
const (
	DefaultAccessTokenTTL  = time.Hour
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
	DefaultCodeTTL         = 60 * time.Second
	DefaultLoginTTL        = 10 * time.Minute
)

// Config configures the authorization server.
type Config struct {
	// Issuer is the gateway's public URL: the issuer in the metadata, and
	// the base of every endpoint URL.
	Issuer string
	// Resource is the one protected resource tokens are for (RFC 8707):
	// the documents endpoint's URL.
	Resource string
	// Scopes are the scopes clients may ask for, in display order.
	Scopes []Scope
	Store  Store
	// IdentityProvider logs users in; nil leaves the authorization server
	// unconfigured: every endpoint answers that, and nothing else.
	IdentityProvider *IdentityProvider
	Log              *slog.Logger
	// Zero lifetimes take the defaults above.
	AccessTokenTTL, RefreshTokenTTL, CodeTTL, LoginTTL time.Duration
	// RegistrationsPerMinute bounds RFC 7591 registrations per client IP;
	// zero means DefaultRegistrationsPerMinute.
	RegistrationsPerMinute int
	// AuthorizationsPerMinute bounds /oauth/authorize requests (each may
	// store a login session) per client IP; zero means
	// DefaultAuthorizationsPerMinute.
	AuthorizationsPerMinute int
	// TotalRegistrationsPerMinute and TotalAuthorizationsPerMinute bound
	// the same requests from all addresses together; zero means
	// DefaultTotalRegistrationsPerMinute and
	// DefaultTotalAuthorizationsPerMinute.
	TotalRegistrationsPerMinute, TotalAuthorizationsPerMinute int
	// MaxUnusedClients caps the clients that never obtained a token, and
	// MaxLoginSessions the stored login sessions: past them the oldest are
	// deleted (store.OAuthCapStore says why evict rather than refuse).
	// Zero means DefaultMaxUnusedClients and DefaultMaxLoginSessions.
	MaxUnusedClients, MaxLoginSessions int
	// NewCounter returns the counter of one limit ("authorize", "register",
	// their gateway-wide "authorize_total", "register_total", and the
	// client metadata fetch rates "client_metadata_address",
	// "client_metadata_host", "client_metadata_total"), shared between
	// replicas (Redis); nil counts in memory, per process.
	NewCounter func(limit string) httprate.LimitCounter
	// Refused, if set, is told each refusal of a limit or a bound, by
	// endpoint and reason (metrics).
	Refused func(endpoint, reason string)
	// ClientMetadata turns on Client ID Metadata Documents (cimd.go);
	// without hosts they are off.
	ClientMetadata ClientMetadataConfig
	// AppRedirectSchemes are the single-label private-use redirect schemes
	// clients may register (redirects.go), each passing
	// CheckAppRedirectScheme; nil allows none (reverse-DNS schemes,
	// https and loopback http are always allowed).
	// DefaultAppRedirectSchemes is the configuration's default.
	AppRedirectSchemes []string
}

// Server is the authorization server.
type Server struct {
	cfg    Config
	secure bool // the issuer is https: cookies are __Host- and Secure
	origin string
	// cimd fetches client metadata documents; nil when they are off.
	cimd *metadataFetcher
	// redirects is the one redirect URI rule.
	redirects redirectRule
}

// New builds the authorization server. A Config without an identity
// provider still builds: its endpoints answer unconfigured.
func New(cfg Config) *Server {
	cfg.AccessTokenTTL = cmp.Or(cfg.AccessTokenTTL, DefaultAccessTokenTTL)
	cfg.RefreshTokenTTL = cmp.Or(cfg.RefreshTokenTTL, DefaultRefreshTokenTTL)
	cfg.CodeTTL = cmp.Or(cfg.CodeTTL, DefaultCodeTTL)
	cfg.LoginTTL = cmp.Or(cfg.LoginTTL, DefaultLoginTTL)
	cfg.RegistrationsPerMinute = cmp.Or(cfg.RegistrationsPerMinute, DefaultRegistrationsPerMinute)
	cfg.AuthorizationsPerMinute = cmp.Or(cfg.AuthorizationsPerMinute, DefaultAuthorizationsPerMinute)
	cfg.TotalRegistrationsPerMinute = cmp.Or(cfg.TotalRegistrationsPerMinute, DefaultTotalRegistrationsPerMinute)
	cfg.TotalAuthorizationsPerMinute = cmp.Or(cfg.TotalAuthorizationsPerMinute, DefaultTotalAuthorizationsPerMinute)
	cfg.MaxUnusedClients = cmp.Or(cfg.MaxUnusedClients, DefaultMaxUnusedClients)
	cfg.MaxLoginSessions = cmp.Or(cfg.MaxLoginSessions, DefaultMaxLoginSessions)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" {
		panic("oauth: Config.Issuer must be an absolute URL")
	}
	for _, sc := range cfg.AppRedirectSchemes {
		if err := CheckAppRedirectScheme(sc); err != nil {
			panic("oauth: Config.AppRedirectSchemes: " + err.Error())
		}
	}
	s := &Server{
		cfg: cfg, secure: u.Scheme == "https", origin: u.Scheme + "://" + u.Host,
		cimd: newMetadataFetcher(cfg.ClientMetadata, cfg.Log, cfg.NewCounter), redirects: newRedirectRule(cfg.AppRedirectSchemes),
	}
	if s.cimd != nil {
		s.cimd.redirects = s.redirects
	}
	return s
}

// Configured reports whether an identity provider is configured, i.e.
// whether users can authorize clients at all.
func (s *Server) Configured() bool { return s.cfg.IdentityProvider != nil }

func (s *Server) scopeNames() []string {
	out := make([]string, 0, len(s.cfg.Scopes))
	for _, sc := range s.cfg.Scopes {
		out = append(out, sc.Name)
	}
	return out
}

// Routes returns the /oauth/* endpoints, to be mounted at /oauth.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
			// Every answer gets a CSP that allows nothing, whoever writes
			// it; the pages of web/ replace it with theirs, which allows
			// their stylesheet and nothing more.
			w.Header().Set("Content-Security-Policy", strictCSP)
			w.Header().Set("X-Content-Type-Options", "nosniff")
			next.ServeHTTP(w, r)
		})
	})
	if s.cimd != nil {
		r.Use(withFetchAddress) // the fetch rate's key, for the client lookups
	}
	registerLimit := s.limited(limitRegister, s.cfg.RegistrationsPerMinute, s.cfg.TotalRegistrationsPerMinute, func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many client registrations from this address or in all; try again in a minute")
	}, writeUnavailable)
	authorizeLimit := s.limited(limitAuthorize, s.cfg.AuthorizationsPerMinute, s.cfg.TotalAuthorizationsPerMinute, func(w http.ResponseWriter, _ *http.Request) {
		s.errorPage(w, http.StatusTooManyRequests, "Too many sign-in attempts",
			"Too many authorization requests came from this address, or to this gateway in all. Try again in a minute.")
	}, func(w http.ResponseWriter, _ *http.Request, part string) { s.signInUnavailable(w, part) })
	r.Group(func(r chi.Router) {
		r.Use(CORS)
		r.With(registerLimit).Post("/register", s.guardJSON(s.register))
		r.Post("/token", s.guardJSON(s.token))
		r.Post("/revoke", s.guardJSON(s.revoke))
		r.Options("/{endpoint:register|token|revoke}", func(http.ResponseWriter, *http.Request) {})
	})
	r.With(authorizeLimit).Get("/authorize", s.guardPage(s.authorize))
	r.With(authorizeLimit).Post("/authorize", s.guardPage(s.authorize))
	r.Get("/callback", s.guardPage(s.callback))
	r.Get("/consent", s.guardPage(s.consentPage))
	r.Post("/consent", s.guardPage(s.consentAnswer))
	return r
}

// strictCSP is the policy of every /oauth answer that is not one of the
// gateway's own pages: no script, no style, no framing, no form target.
const strictCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// maxBodyBytes bounds every OAuth request body: forms and registration
// documents are small.
const maxBodyBytes = 64 << 10

// MaxBodyBytes is the cap on every /oauth request body (maxBodyBytes): the
// gateway's body budget refuses a longer declared length before reserving.
const MaxBodyBytes = maxBodyBytes

// unconfiguredMessage is what every endpoint says without an identity
// provider.
const unconfiguredMessage = "this gateway's OAuth authorization server is not configured: set oidc.issuer and oidc.client_id (see docs/oauth.md)"

// guardJSON answers unconfigured with a JSON OAuth error.
func (s *Server) guardJSON(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.Configured() {
			writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", unconfiguredMessage)
			return
		}
		h(w, r)
	}
}

// guardPage answers unconfigured with an HTML page (these are browser
// endpoints).
func (s *Server) guardPage(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.Configured() {
			s.errorPage(w, http.StatusServiceUnavailable, "Sign-in is not available", unconfiguredMessage)
			return
		}
		h(w, r)
	}
}

// Metadata serves RFC 8414 authorization server metadata.
func (s *Server) Metadata(w http.ResponseWriter, _ *http.Request) {
	if !s.Configured() {
		writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", unconfiguredMessage)
		return
	}
	base := s.cfg.Issuer
	md := map[string]any{
		"issuer":                                     base,
		"authorization_endpoint":                     base + "/oauth/authorize",
		"token_endpoint":                             base + "/oauth/token",
		"registration_endpoint":                      base + "/oauth/register",
		"revocation_endpoint":                        base + "/oauth/revoke",
		"response_types_supported":                   []string{"code"},
		"response_modes_supported":                   []string{"query"},
		"grant_types_supported":                      []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":           []string{"S256"},
		"token_endpoint_auth_methods_supported":      []string{"none"},
		"revocation_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                           s.scopeNames(),
		"service_documentation":                      base + "/",
	}
	if s.cimd != nil {
		md["client_id_metadata_document_supported"] = true
	}
	writeJSON(w, http.StatusOK, md)
}

// ScopesSupported are the scope names, for the resource metadata.
func (s *Server) ScopesSupported() []string { return s.scopeNames() }

// isResource reports whether an RFC 8707 resource names the one resource
// this server issues tokens for.
func (s *Server) isResource(v string) bool { return namesResource(s.cfg.Resource, v) }

// namesResource reports whether v names resource; a trailing slash names
// the same one.
func namesResource(resource, v string) bool {
	return v == resource || strings.TrimSuffix(v, "/") == resource
}

// errInvalidTarget is RFC 8707's error for a resource this server does not
// issue tokens for.
func errInvalidTarget(resource string) *oauthError {
	return refuse(codeInvalidTarget, fmt.Sprintf(
		"The requested resource is invalid, missing, unknown, or malformed. This authorization server issues tokens only for resource %q.", resource))
}

// logProtocolError logs a refusal at debug (it is the client's problem)
// and a server error at warn, with its cause; never a token or code.
func (s *Server) logProtocolError(msg string, err error) {
	e := asOAuthError(err)
	var mr *metadataRefusal
	if errors.As(err, &mr) {
		e = &oauthError{code: codeInvalidClient, description: metadataRefusedText}
	}
	level := slog.LevelDebug
	attrs := []any{"error", e.code, "description", e.description}
	if e.httpStatus() >= 500 {
		level = slog.LevelWarn
		if e.cause != nil {
			attrs = append(attrs, "cause", e.cause.Error())
		}
	}
	s.cfg.Log.Log(context.Background(), level, msg, attrs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes an OAuth JSON error (RFC 6749 §5.2 shape).
func writeError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// writeUnavailable is the JSON answer of an endpoint whose dependency part
// failed: 503 temporarily_unavailable naming it (RFC 6749 §4.1.2.1's code
// for a server that cannot serve for now), never a refusal that blames
// the caller.
func writeUnavailable(w http.ResponseWriter, _ *http.Request, part string) {
	writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the "+part+" is unavailable; retry later")
}
