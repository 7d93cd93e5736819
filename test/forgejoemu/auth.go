package forgejoemu

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// caller is who a request acts for, decided once per request by authenticate.
type caller struct {
	user *User // nil: anonymous
	// scoped is true for token callers: their scope limits every route.
	// Password (Basic) callers are not scoped, as in Forgejo.
	scoped bool
	scope  string
	// publicOnly is set by requireScope for a "public-only" token.
	publicOnly bool
}

type callerKey struct{}

// callerFrom returns the request's caller; anonymous if authenticate did not run.
func callerFrom(ctx context.Context) *caller {
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		return c
	}
	return &caller{}
}

// authenticate resolves the Authorization header like Forgejo's API auth
// group (token/Bearer, then Basic with a token or password). No header means
// anonymous; a credential that does not resolve is 401 before any route runs.
func (e *Emulator) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, msg := e.resolveCaller(r.Header.Get("Authorization"))
		if msg != "" {
			e.writeError(w, http.StatusUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// resolveCaller returns the caller, or the message of Forgejo's 401.
func (e *Emulator) resolveCaller(header string) (*caller, string) {
	if header == "" {
		return &caller{}, ""
	}
	// Forgejo's OAuth2 method: exactly two fields, "token" (case-sensitive)
	// or "bearer" (any case).
	if f := strings.Fields(header); len(f) == 2 && (f[0] == "token" || strings.EqualFold(f[0], "bearer")) {
		if c := e.tokenCaller(f[1]); c != nil {
			return c, ""
		}
		return nil, "user does not exist [uid: 0, name: ]"
	}
	scheme, rest, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "basic") {
		return &caller{}, "" // no method claims it: anonymous, as in Forgejo
	}
	req := http.Request{Header: http.Header{"Authorization": {"Basic " + rest}}}
	name, password, ok := req.BasicAuth()
	if !ok {
		return nil, "user does not exist [uid: 0, name: ]"
	}
	secret := password
	if password == "" || password == "x-oauth-basic" {
		secret = name
	}
	if c := e.tokenCaller(secret); c != nil {
		return c, ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.userLocked(name)
	if u == nil {
		return nil, fmt.Sprintf("user does not exist [uid: 0, name: %s]", name)
	}
	want, set := e.st.passwords[u.ID]
	if !set {
		return nil, fmt.Sprintf("user's password isn't set [uid: %d, name: %s]", u.ID, u.Login)
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(password)) != 1 {
		return nil, fmt.Sprintf("user's password is invalid [uid: %d, name: %s]", u.ID, u.Login)
	}
	return &caller{user: u}, ""
}

func (e *Emulator) tokenCaller(secret string) *caller {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.st.tokens[secret]
	if t == nil {
		return nil
	}
	return &caller{user: t.user, scoped: true, scope: t.scope}
}

// SetPassword gives a user a password for Basic authentication (the
// gateway's stdio mode may use one). Password callers are not token-scoped.
func (e *Emulator) SetPassword(login, password string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.userLocked(login)
	if u == nil {
		return fmt.Errorf("%w: user %s", ErrNotFound, login)
	}
	e.st.passwords[u.ID] = password
	return nil
}

// requireScope is Forgejo's tokenRequiresScopes: a token caller needs
// read:<category> for GET/HEAD and write:<category> for other methods, or
// gets 403 before the route runs. It also records a public-only token.
func (e *Emulator) requireScope(cats ...scopeCategory) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := callerFrom(r.Context())
			if !c.scoped {
				next.ServeHTTP(w, r)
				return
			}
			level := levelRead
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				level = levelWrite
			}
			set, err := parseScope(c.scope)
			if err != nil {
				e.writeError(w, http.StatusForbidden, "checking scope failed: "+err.Error())
				return
			}
			if !set.has(level, cats...) {
				e.writeError(w, http.StatusForbidden,
					"token does not have at least one of required scope(s): "+requiredScopes(level, cats...))
				return
			}
			if set.publicOnly {
				scoped := *c
				scoped.publicOnly = true
				r = r.WithContext(context.WithValue(r.Context(), callerKey{}, &scoped))
			}
			next.ServeHTTP(w, r)
		})
	}
}
