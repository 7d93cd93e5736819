package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// PrincipalKind says where a caller's identity comes from
// (docs/architecture.md#principals).
type PrincipalKind int

// The kinds of principal.
const (
	// ForgejoPassthrough: a bearer forwarded to Forgejo as is; Forgejo is the
	// authority, so the gateway knows no scopes for it.
	ForgejoPassthrough PrincipalKind = iota + 1
	// OAuthConsent: a gateway-issued token backed by a consent row.
	OAuthConsent
	// LegacyProjectToken: a static project token (memory/task only).
	LegacyProjectToken
	// ProcessCredential: the stdio process's own configured credential.
	ProcessCredential
)

// Principal is an authenticated caller.
type Principal struct {
	Kind PrincipalKind
	// Key identifies the caller for budgets and logs: an opaque consent ID or
	// a hash of a passthrough credential, never the credential itself.
	Key string
	// Scopes is what the gateway knows the caller may do; ScopesKnown is
	// false for passthrough credentials, whose scopes only Forgejo knows.
	Scopes      []string
	ScopesKnown bool
	ProjectID   string
	Subject     string
	ConsentID   string
	// ClientID is the OAuth client the consent was given to (OAuth
	// consents only): which agent application called, for the audit
	// record.
	ClientID string
	// credential is the secret forwarded to Forgejo (passthrough and stdio
	// only). It is unexported so it cannot be logged or serialised by accident.
	credential Credential
}

// Credential is a secret to present to Forgejo (see upstream.Credential).
type Credential = upstream.Credential

// NewPassthrough returns the principal of a Forgejo bearer: keyed on the
// SHA-256 of the token so budgets and logs never hold it.
func NewPassthrough(token string) *Principal {
	return &Principal{Kind: ForgejoPassthrough, Key: "fj:" + CredentialHash(token), credential: Credential{Token: token}}
}

// GatewayTokenPrefix starts every token the gateway issues (access agw_at_,
// refresh agw_rt_, legacy agw_lt_, and its codes and sessions).
const GatewayTokenPrefix = "agw_"

// IsGatewayToken reports whether a bearer is (or pretends to be) one of the
// gateway's own tokens. Such a bearer is never a Forgejo credential, so the
// passthrough endpoint refuses it instead of forwarding it
// (docs/architecture.md#forgejo-token-passthrough). The prefix is matched
// without regard to case: a case-mangled gateway token is still the gateway's
// secret and must not leave for Forgejo.
func IsGatewayToken(bearer string) bool {
	return len(bearer) >= len(GatewayTokenPrefix) && strings.EqualFold(bearer[:len(GatewayTokenPrefix)], GatewayTokenPrefix)
}

// CredentialHash is the key budgets and logs use for a credential: the
// first 128 bits of its SHA-256 in hex, so neither ever holds the secret.
func CredentialHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
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

// Verified reports whether the gateway itself checked the credential (an
// OAuth consent, a legacy token, the stdio process's own credential). A
// passthrough bearer is not verified: only Forgejo knows whether it is
// valid, so it is an identity only for the calls that send it there.
func (p *Principal) Verified() bool { return p != nil && p.Kind != ForgejoPassthrough }

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
