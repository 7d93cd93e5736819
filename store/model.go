package store

import (
	"slices"
	"time"
)

// Account owns projects. IDs start with "acc_".
type Account struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Project is the tenant boundary of the documents toolset. IDs start with
// "prj_".
type Project struct {
	ID        string
	AccountID string
	Name      string
	CreatedAt time.Time
}

// Repository is a GitHub repository linked to a project, read through one
// GitHub App installation. IDs start with "rep_".
type Repository struct {
	ID        string
	ProjectID string
	Owner     string
	Name      string
	// InstallationID selects the GitHub App installation whose token reads
	// the repository; always > 0.
	InstallationID int64
	CreatedAt      time.Time
	// RevokedAt is nil while the link is active.
	RevokedAt *time.Time
}

// Document source roles the gateway knows by name. Roles are free text
// (see ValidateRole); these are the ones code switches on.
const (
	// RoleRuntime sources are what runtime_bootstrap_get lists.
	RoleRuntime = "runtime"
	// RoleInstruction sources feed the instruction catalog
	// (docs/architecture.md#instruction-catalog-contract).
	RoleInstruction = "instruction"
)

// MaxFragmentLimit is the largest and the default fragment limit of a
// document source: 64 KiB, the fragment bound of
// docs/architecture.md#documents-contract.
const MaxFragmentLimit = 65536

// NewDocumentSource is the input of AddDocumentSource. Exactly one of
// CommitSHA and TrackingRef is set; FragmentLimit 0 means MaxFragmentLimit.
type NewDocumentSource struct {
	ProjectID     string
	RepositoryID  string
	Role          string
	Path          string
	CommitSHA     string
	TrackingRef   string
	FragmentLimit int
}

// DocumentSource is one allowlisted document: a path in a repository of the
// project, pinned to a commit or tracking a branch. IDs start with "src_".
type DocumentSource struct {
	ID        string
	ProjectID string
	// Repository is the linked repository the source reads, with its
	// installation binding and its own revocation state.
	Repository Repository
	Role       string
	Path       string
	// CommitSHA is the pinned 40-hex commit; empty for a tracking source.
	CommitSHA string
	// TrackingRef is the branch a tracking source follows; empty when pinned.
	TrackingRef   string
	FragmentLimit int
	CreatedAt     time.Time
	// RevokedAt is nil while the source itself is unrevoked; see Active.
	RevokedAt *time.Time
}

// Pinned reports whether the source names an immutable commit, which
// standalone document reads require.
func (s DocumentSource) Pinned() bool { return s.CommitSHA != "" }

// Active reports whether neither the source nor its repository is revoked.
func (s DocumentSource) Active() bool {
	return s.RevokedAt == nil && s.Repository.RevokedAt == nil
}

// Consent is one OAuth consent: a subject allowed a client some scopes on a
// project. IDs start with "grt_" and the table is oauth_grants, both
// historical names kept for stored data (see consents.go).
type Consent struct {
	ID        string
	ProjectID string
	Subject   string
	ClientID  string
	// Scopes is a sorted set.
	Scopes    []string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// TokenKind tells access tokens from refresh tokens.
type TokenKind string

// The token kinds.
const (
	TokenAccess  TokenKind = "access"
	TokenRefresh TokenKind = "refresh"
)

// Token secret prefixes: they let a bearer be routed to the right lookup
// without a database round trip, and let secret scanners recognise leaks.
const (
	AccessTokenPrefix  = "agw_at_"
	RefreshTokenPrefix = "agw_rt_"
	LegacyTokenPrefix  = "agw_lt_"
)

// IssuedToken is a token just issued. Secret is the only copy of the bearer
// value: the store keeps its hash.
type IssuedToken struct {
	Secret    string
	Kind      TokenKind
	ConsentID string
	// FamilyID groups a refresh token with its rotations and the access
	// tokens issued alongside them; empty for a lone access token.
	FamilyID  string
	ExpiresAt time.Time
}

// TokenConsent is who an access token speaks for: the consent behind it.
// (Named apart from middleware.Principal, the caller a request is
// authenticated as, which a TokenConsent becomes.)
type TokenConsent struct {
	ConsentID string
	ProjectID string
	Subject   string
	ClientID  string
	// Scopes is the consent's sorted scope set.
	Scopes    []string
	ExpiresAt time.Time
}

// HasScope reports whether the principal's consent includes scope.
func (p TokenConsent) HasScope(scope string) bool {
	_, found := slices.BinarySearch(p.Scopes, scope)
	return found
}

// Legacy project token permissions: the only two there are.
const (
	PermissionMemory = "memory"
	PermissionTask   = "task"
)

// LegacyToken is a static project token. IDs start with "ltk_".
type LegacyToken struct {
	ID        string
	ProjectID string
	// Permissions is a sorted, non-empty subset of {memory, task}.
	Permissions []string
	CreatedAt   time.Time
	RevokedAt   *time.Time
}

// HasPermission reports whether the token carries permission.
func (t LegacyToken) HasPermission(permission string) bool {
	return slices.Contains(t.Permissions, permission)
}

// IssuedLegacyToken is a legacy token just issued; Secret is its only copy.
type IssuedLegacyToken struct {
	LegacyToken
	Secret string
}

// Client is an OAuth client registered with RFC 7591. Client IDs start with
// "cli_". Clients are public (PKCE, no secret).
type Client struct {
	ClientID     string
	Name         string
	RedirectURIs []string
	CreatedAt    time.Time
	// FirstTokenAt is when the client first redeemed an authorization code;
	// nil for a client that never obtained a token, which the purge
	// deletes once it is older than the unused-client TTL.
	FirstTokenAt *time.Time
}
