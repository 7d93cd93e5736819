// Package store is the gateway's persistence: accounts and projects, the
// GitHub repositories and document sources a project allowlists, the OAuth
// clients, consents and tokens of the gateway's authorization server, legacy
// static project tokens, and the instruction catalog (catalog.go).
//
// One interface, Store, has two backends behind one SQL layer: SQLite
// (modernc.org/sqlite, pure Go, a file under the data directory, the
// zero-configuration default) and PostgreSQL (github.com/jackc/pgx/v5 through
// database/sql). Both run the same embedded migrations at Open. Sharing the SQL
// layer means one test suite exercises the exact code each backend runs; the
// backends differ only in how they connect, lock migrations, encode times and
// classify constraint errors (see dialect).
//
// The project is the tenant boundary: every method that reads a
// project-owned row takes the project ID and treats a row of another project
// exactly like a missing one (ErrNotFound). Token secrets are never stored;
// only their SHA-256 hashes are (see HashToken).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Sentinel errors. Methods wrap them with %w and a message naming the field or
// row, so callers test with errors.Is and may log the message.
var (
	// ErrNotFound means the row does not exist or belongs to another tenant;
	// the two are deliberately indistinguishable.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the write would violate a uniqueness rule.
	ErrConflict = errors.New("conflict")
	// ErrInvalid means an input failed validation; the message names the field.
	ErrInvalid = errors.New("invalid")
	// ErrTokenReused means an authorization code or a refresh token was
	// presented after it had already been used. The store has stored
	// nothing; the caller (the authorization server) revokes the family,
	// and the token endpoint answers invalid_grant.
	ErrTokenReused = errors.New("refresh token reused")
	// ErrNotMember means a consent was asked of a subject that is not a
	// member of the project (or of a project that does not exist). It is
	// an input the store refuses, so it is ErrInvalid too.
	ErrNotMember = fmt.Errorf("%w: subject: not a member of the project", ErrInvalid)
)

// DefaultAccountName is the account that CreateProject uses when it is given
// no account ID. It is created on first use.
const DefaultAccountName = "default"

// AccountStore keeps accounts, the owners of projects and of account-scoped
// instruction sources (docs/architecture.md#instruction-catalog-contract).
type AccountStore interface {
	// CreateAccount stores a new account; names are unique (ErrConflict).
	CreateAccount(ctx context.Context, name string) (Account, error)
	// GetAccount returns one account or ErrNotFound.
	GetAccount(ctx context.Context, accountID string) (Account, error)
}

// ProjectStore keeps projects, the tenant boundary, and their members, the
// OIDC subjects allowed to give OAuth consents for a project.
type ProjectStore interface {
	// CreateProject stores a new project in an account; an empty accountID
	// means the default account (created if missing). Names are unique per
	// account (ErrConflict).
	CreateProject(ctx context.Context, accountID, name string) (Project, error)
	// GetProject returns one project or ErrNotFound.
	GetProject(ctx context.Context, projectID string) (Project, error)
	// ListProjects returns the projects of one account ordered by name; an
	// empty accountID lists the projects of every account.
	ListProjects(ctx context.Context, accountID string) ([]Project, error)
	// AddMember allows subject to consent for the project. Adding an existing
	// member is not an error.
	AddMember(ctx context.Context, projectID, subject string) error
	// RemoveMember withdraws that permission and revokes, in the same
	// transaction, every consent the subject holds in the project, so that its
	// tokens stop working at once. Removing a non-member is ErrNotFound.
	RemoveMember(ctx context.Context, projectID, subject string) error
	// IsMember reports whether subject may consent for the project.
	IsMember(ctx context.Context, projectID, subject string) (bool, error)
	// ListProjectsForSubject returns the projects subject is a member of,
	// ordered by name: the choices of an OAuth consent page.
	ListProjectsForSubject(ctx context.Context, subject string) ([]Project, error)
}

// RepositoryStore keeps the GitHub repositories linked to a project and the
// App installation that reads each of them.
type RepositoryStore interface {
	// LinkRepository links owner/name to a project. Owner and name are unique
	// per project among active links, compared case-insensitively
	// (ErrConflict).
	LinkRepository(ctx context.Context, projectID, owner, name string, installationID int64) (Repository, error)
	// GetRepository returns one repository of the project, revoked or not, or
	// ErrNotFound (also for another project's repository).
	GetRepository(ctx context.Context, projectID, repositoryID string) (Repository, error)
	// FindRepository returns the project's active link of owner/name, matched
	// case-insensitively, or ErrNotFound.
	FindRepository(ctx context.Context, projectID, owner, name string) (Repository, error)
	// ListRepositories returns the project's repositories, active ones only
	// unless includeRevoked.
	ListRepositories(ctx context.Context, projectID string, includeRevoked bool) ([]Repository, error)
	// RevokeRepository unlinks a repository and revokes its document sources
	// in one transaction. Revoking a revoked repository returns it unchanged.
	RevokeRepository(ctx context.Context, projectID, repositoryID string) (Repository, error)
}

// DocumentSourceStore keeps the allowlist of documents a project may read
// (docs/architecture.md#documents-contract): one repository path pinned to
// a commit or tracking a branch.
type DocumentSourceStore interface {
	// AddDocumentSource validates and stores a source. Its repository must
	// belong to the same project (ErrNotFound otherwise) and be active
	// (ErrInvalid otherwise); an identical active source is ErrConflict.
	AddDocumentSource(ctx context.Context, src NewDocumentSource) (DocumentSource, error)
	// GetDocumentSource returns one source of the project, revoked or not, so
	// that a caller can tell source_revoked from not_found. Another project's
	// source is ErrNotFound, indistinguishable from an absent one.
	GetDocumentSource(ctx context.Context, projectID, sourceID string) (DocumentSource, error)
	// ListDocumentSources returns the project's sources ordered by creation,
	// active ones only unless includeRevoked.
	ListDocumentSources(ctx context.Context, projectID string, includeRevoked bool) ([]DocumentSource, error)
	// ListActiveSourcesByRole returns the project's active sources of one role
	// (source and repository both unrevoked), ordered by creation.
	ListActiveSourcesByRole(ctx context.Context, projectID, role string) ([]DocumentSource, error)
	// RevokeDocumentSource revokes a source of the project. Revoking a revoked
	// source returns it unchanged.
	RevokeDocumentSource(ctx context.Context, projectID, sourceID string) (DocumentSource, error)
}

// ConsentStore keeps the OAuth consents of the gateway's authorization server and
// resolves the access tokens issued under them
// (docs/architecture.md#authorization-server). Tokens are
// issued, rotated and revoked by the authorization server through
// AuthorizationServerStore (the one token lifecycle: handlers/oauth → the store);
// the admin CLI only issues lone access tokens here.
type ConsentStore interface {
	// CreateConsent records a consent: subject allows clientID the scopes on the
	// project. The subject must be a member of the project (ErrInvalid
	// otherwise). Scopes are stored as a sorted set; a consent is never
	// expanded later: consenting again records a new consent.
	CreateConsent(ctx context.Context, projectID, subject, clientID string, scopes []string) (Consent, error)
	// GetConsent returns one consent, revoked or not, or ErrNotFound.
	GetConsent(ctx context.Context, consentID string) (Consent, error)
	// ListConsents returns the project's consents ordered by creation, active ones
	// only unless includeRevoked.
	ListConsents(ctx context.Context, projectID string, includeRevoked bool) ([]Consent, error)
	// RevokeConsent revokes a consent and every token issued under it. Revoking a
	// revoked consent returns it unchanged.
	RevokeConsent(ctx context.Context, consentID string) (Consent, error)

	// IssueAccessToken issues a lone access token (no refresh family) under an
	// active consent. The secret is in the result and nowhere else.
	IssueAccessToken(ctx context.Context, consentID string, ttl time.Duration) (IssuedToken, error)
	// LookupAccessToken resolves a bearer secret to its principal. Unknown,
	// expired or revoked tokens, refresh tokens, and tokens of a revoked consent
	// are all ErrNotFound.
	LookupAccessToken(ctx context.Context, secret string) (TokenConsent, error)
}

// LegacyTokenStore keeps legacy static project tokens, which carry only the
// historical memory/task permissions and never an OAuth scope.
type LegacyTokenStore interface {
	// IssueLegacyToken issues a token for the project with a non-empty subset
	// of {memory, task}; anything else is ErrInvalid. The secret is in the
	// result and nowhere else.
	IssueLegacyToken(ctx context.Context, projectID string, permissions []string) (IssuedLegacyToken, error)
	// LookupLegacyToken resolves a secret to its token; unknown or revoked
	// tokens are ErrNotFound.
	LookupLegacyToken(ctx context.Context, secret string) (LegacyToken, error)
	// RevokeLegacyToken revokes one token of the project by ID. Revoking a
	// revoked token returns it unchanged.
	RevokeLegacyToken(ctx context.Context, projectID, tokenID string) (LegacyToken, error)
}

// ClientStore keeps OAuth clients registered dynamically (RFC 7591).
type ClientStore interface {
	// RegisterClient stores a client under a new random client ID.
	RegisterClient(ctx context.Context, name string, redirectURIs []string) (Client, error)
	// GetClient returns one client or ErrNotFound.
	GetClient(ctx context.Context, clientID string) (Client, error)
	// ListClients returns the registered clients, oldest first; only those
	// that never obtained a token if unusedOnly.
	ListClients(ctx context.Context, unusedOnly bool) ([]Client, error)
	// DeleteClient removes a client registration and revokes every consent
	// of the client (and so its tokens). Deleting an absent client is
	// ErrNotFound.
	DeleteClient(ctx context.Context, clientID string) error
}

// Store is everything the gateway persists. Consumers should depend on the
// narrowest of the interfaces it is made of.
type Store interface {
	AccountStore
	ProjectStore
	RepositoryStore
	DocumentSourceStore
	CatalogStore
	ConsentStore
	LegacyTokenStore
	ClientStore
	AuthorizationServerStore
	OAuthPurgeStore
	OAuthCapStore
	WorkflowPurgeStore
	AuditStore
	AuditPurgeStore

	// Ping checks that the database answers: the readiness probe.
	Ping(ctx context.Context) error
	// ProbeWrite rewrites one row kept for the purpose: the readiness
	// probe's proof that the database can still write.
	ProbeWrite(ctx context.Context) error
	// PoolStats are the connection pool's figures (metrics).
	PoolStats() sql.DBStats
	// Close releases the connection pool.
	Close() error
}

// Open connects to the store named by url, applies pending migrations and
// returns it. An empty url means SQLite in <dataDir>/agent-gateway.db (the
// directory is created); postgres:// and postgresql:// mean PostgreSQL;
// sqlite://PATH and file:… mean SQLite at that path or SQLite URI.
func Open(ctx context.Context, url, dataDir string) (Store, error) {
	switch {
	case url == "":
		if dataDir == "" {
			return nil, fmt.Errorf("%w: data_dir: empty, and no database URL given", ErrInvalid)
		}
		return openSQLite(ctx, filepath.Join(dataDir, "agent-gateway.db"), true)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return openPostgres(ctx, url)
	case strings.HasPrefix(url, "sqlite://"):
		path := strings.TrimPrefix(url, "sqlite://")
		if path == "" {
			return nil, fmt.Errorf("%w: database URL: sqlite:// needs a path", ErrInvalid)
		}
		return openSQLite(ctx, path, true)
	case strings.HasPrefix(url, "file:"):
		return openSQLite(ctx, url, false)
	default:
		// The URL may hold a password: name only its scheme.
		scheme, _, _ := strings.Cut(url, ":")
		return nil, fmt.Errorf("%w: database URL: unsupported scheme %q (want postgres://, postgresql://, sqlite:// or file:)", ErrInvalid, scheme)
	}
}

// Answered reports whether err is the store answering — a missing row, a
// conflict, a refused input, a reused token, a revoked source, a changed
// catalog — rather than the store failing (a lost connection, a full disk).
// A failure is the gateway's fault and is answered unavailable; an answer
// is the caller's result. A value the database refused (refusedInput) is
// an answer too: a caller who sends bytes PostgreSQL cannot hold must not
// be able to make the store look down to everyone (its circuit breaker).
func Answered(err error) bool {
	for _, e := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrTokenReused, ErrRevoked, ErrCatalogChanged} {
		if errors.Is(err, e) {
			return true
		}
	}
	return refusedInput(err)
}
