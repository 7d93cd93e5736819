package middleware

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Authenticator turns a bearer into a Principal. It returns ErrInvalidToken
// for an unknown, expired or revoked token.
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
	// ResourceMetadataURL is the endpoint's RFC 9728 metadata URL, sent in
	// WWW-Authenticate so MCP clients can discover how to authenticate.
	ResourceMetadataURL string
	// Scope, when set, is named in every 401 challenge (RFC 6750 §3, MCP
	// authorization "scope selection"): the scope a client should ask for,
	// so it does not ask for every scope the metadata lists.
	Scope string
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
				challenge(w, r, opts, "invalid_request", "tokens are accepted only in the Authorization header")
				return
			}
			values := r.Header.Values("Authorization")
			if len(values) == 0 {
				if opts.Required {
					challenge(w, r, opts, "", "authentication required")
					return
				}
				next.ServeHTTP(w, r)
				return
			}
			scheme, token, ok := strings.Cut(values[0], " ")
			token = strings.TrimSpace(token)
			if len(values) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
				challenge(w, r, opts, "invalid_request", "expected one Authorization: Bearer <token> header")
				return
			}
			if opts.Refused != nil && !opts.Refused.admit(w, r) {
				return
			}
			p, err := a.Authenticate(r.Context(), token)
			if err != nil || p == nil {
				if opts.Refused != nil {
					opts.Refused.refused(w, r)
				}
				// Logged under its hash, so refusals of one made-up token
				// can be told apart without the log holding it.
				RecordFromContext(r.Context()).SetCaller("refused:" + CredentialHash(token))
				challenge(w, r, opts, "invalid_token", "the bearer token is not valid")
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

// Challenge answers 401 with a WWW-Authenticate header naming the
// endpoint's resource metadata (RFC 9728 §5.1) and, when given, an RFC 6750
// error code.
func Challenge(w http.ResponseWriter, r *http.Request, resourceMetadataURL, errCode, message string) {
	challenge(w, r, AuthOptions{ResourceMetadataURL: resourceMetadataURL}, errCode, message)
}

// challenge is Challenge with the endpoint's scope hint.
func challenge(w http.ResponseWriter, r *http.Request, opts AuthOptions, errCode, message string) {
	params := []string{}
	if errCode != "" {
		params = append(params, `error="`+errCode+`"`)
	}
	if opts.ResourceMetadataURL != "" {
		params = append(params, `resource_metadata="`+opts.ResourceMetadataURL+`"`)
	}
	if opts.Scope != "" {
		params = append(params, `scope="`+opts.Scope+`"`)
	}
	h := "Bearer"
	if len(params) > 0 {
		h += " " + strings.Join(params, ", ")
	}
	w.Header().Set("WWW-Authenticate", h)
	Refuse(w, r, toolerr.New(toolerr.Unauthenticated, "%s", message))
}
