package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// PrincipalKind says where a caller's identity comes from (DESIGN §8).
type PrincipalKind int

// The kinds of principal.
const (
	// ForgejoPassthrough: a bearer forwarded to Forgejo as is; Forgejo is the
	// authority, so the gateway knows no scopes for it.
	ForgejoPassthrough PrincipalKind = iota + 1
	// OAuthGrant: a gateway-issued token backed by a grant row.
	OAuthGrant
	// LegacyProjectToken: a static project token (memory/task only).
	LegacyProjectToken
	// ProcessCredential: the stdio process's own configured credential.
	ProcessCredential
)

// Principal is an authenticated caller.
type Principal struct {
	Kind PrincipalKind
	// Key identifies the caller for budgets and logs: an opaque grant ID or
	// a hash of a passthrough credential, never the credential itself.
	Key string
	// Scopes is what the gateway knows the caller may do; ScopesKnown is
	// false for passthrough credentials, whose scopes only Forgejo knows.
	Scopes      []string
	ScopesKnown bool
	ProjectID   string
	Subject     string
	GrantID     string
	// credential is the secret forwarded to Forgejo (passthrough and stdio
	// only). It is unexported so it cannot be logged or serialised by accident.
	credential Credential
}

// Credential is a secret to present to Forgejo (see upstream.Credential).
type Credential = upstream.Credential

// NewPassthrough returns the principal of a Forgejo bearer: keyed on the
// SHA-256 of the token so budgets and logs never hold it.
func NewPassthrough(token string) *Principal {
	sum := sha256.Sum256([]byte(token))
	return &Principal{Kind: ForgejoPassthrough, Key: "fj:" + hex.EncodeToString(sum[:16]), credential: Credential{Token: token}}
}

// NewProcessPrincipal returns the stdio principal carrying the process's
// own configured Forgejo credential.
func NewProcessPrincipal(c Credential) *Principal {
	return &Principal{Kind: ProcessCredential, Key: "process", credential: c}
}

// ForgejoCredential returns the secret to present to Forgejo.
func (p *Principal) ForgejoCredential() Credential {
	if p == nil {
		return Credential{}
	}
	return p.credential
}

// HasScope reports whether the principal is known to hold scope.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && p.ScopesKnown && slices.Contains(p.Scopes, scope)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the caller, or nil for an anonymous one.
func PrincipalFromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
