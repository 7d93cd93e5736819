package middleware

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Authenticator turns a bearer into a Principal. It returns ErrInvalidToken
// for an unknown, expired or revoked token, and an error matching
// ErrUnavailable (Unavailable(PartTokenStore, cause)) when it could not
// tell, because its store failed.
type Authenticator interface {
	Authenticate(ctx context.Context, bearer string) (*Principal, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(ctx context.Context, bearer string) (*Principal, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, bearer string) (*Principal, error) {
	return f(ctx, bearer)
}

// ErrInvalidToken is what an Authenticator returns for a token it refuses.
var ErrInvalidToken = errors.New("invalid token")

// AuthOptions configure Authenticate for one endpoint.
type AuthOptions struct {
	// Required: a request without a bearer is refused (documents endpoint).
	// Otherwise it proceeds anonymously (Forgejo endpoint).
	Required bool
	// Challenge is the endpoint's WWW-Authenticate challenge, sent with
	// every 401.
	Challenge Challenge
	// Refused, when set, bounds the bearers one address may have refused
	// per window; past it, its bearers are answered 429 without a lookup.
	Refused *RefusedBearers
}

// Authenticate resolves the caller. A token is only accepted in the
// Authorization header as "Bearer <token>": a token in the query string
// (access_token) is refused outright, because URLs end up in logs and
// browser history.
func Authenticate(a Authenticator, opts AuthOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tokenInQuery(r.URL.RawQuery) {
				opts.Challenge.Unauthorized(w, r, "invalid_request", "tokens are accepted only in the Authorization header")
				return
			}
			values := r.Header.Values("Authorization")
			if len(values) == 0 {
				if opts.Required {
					opts.Challenge.Unauthorized(w, r, "", "authentication required")
					return
				}
				next.ServeHTTP(w, r)
				return
			}
			scheme, token, ok := strings.Cut(values[0], " ")
			token = strings.TrimSpace(token)
			if len(values) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
				opts.Challenge.Unauthorized(w, r, "invalid_request", "expected one Authorization: Bearer <token> header")
				return
			}
			if opts.Refused != nil && !opts.Refused.admit(w, r) {
				return
			}
			p, err := a.Authenticate(r.Context(), token)
			if errors.Is(err, ErrUnavailable) {
				// The store, not the token, failed: no invalid_token (a
				// client would discard a good token and log in again) and
				// no refusal counted against the address. The
				// authenticator logged the cause.
				RefuseUnavailable(w, r, PartTokenStore)
				return
			}
			if err != nil || p == nil {
				if opts.Refused != nil {
					opts.Refused.refused(w, r)
				}
				// Logged under its hash, so refusals of one made-up token
				// can be told apart without the log holding it.
				RecordFromContext(r.Context()).SetCaller("refused:" + CredentialHash(token))
				opts.Challenge.Unauthorized(w, r, "invalid_token", "the bearer token is not valid")
				return
			}
			RecordFromContext(r.Context()).SetCaller(p.Key)
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		})
	}
}

// tokenInQuery reports whether a raw query names access_token, however it
// is spelt. The raw query is searched, not the parsed one: Go drops pairs
// joined with ";", which would let "?x=1;access_token=…" through. Each
// parameter name is also percent-decoded, so "access%5Ftoken" (which every
// query parser reads as access_token) is refused too.
func tokenInQuery(raw string) bool {
	if strings.Contains(strings.ToLower(raw), "access_token") {
		return true
	}
	for _, pair := range strings.FieldsFunc(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil && strings.EqualFold(k, "access_token") {
			return true
		}
	}
	return false
}
