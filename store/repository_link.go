package store

import (
	"context"
	"database/sql"
	"time"
)

// repositoryOwner is where a link of a GitHub repository lives: a project's
// links (document sources read them) or an account's (instruction sources
// read them). Both are the same record under a different owner; the names
// are constants of this package, never input.
type repositoryOwner struct {
	kind     string // "project": the owner named in a not-found refusal
	owners   string // the owners' table
	table    string // the links' table
	column   string // the links' owner column
	columns  string // the links' columns, as scan reads them
	idPrefix string
	what     string // "repository": for refusals and the error of a failed write
}

var (
	projectRepositories = repositoryOwner{kind: "project", owners: "projects", table: "github_repositories",
		column: "project_id", columns: repositoryColumns, idPrefix: "rep", what: "repository"}
	accountRepositories = repositoryOwner{kind: "account", owners: "accounts", table: "account_repositories",
		column: "account_id", columns: accountRepositoryColumns, idPrefix: "arp", what: "account repository"}
)

// repositoryLink is the record both link tables hold, whatever the owner;
// project and account shape it as the owner's own type.
type repositoryLink struct {
	id, ownerID, owner, name string
	installationID           int64
	createdAt                time.Time
	revokedAt                *time.Time
}

func (l repositoryLink) project() Repository {
	return Repository{ID: l.id, ProjectID: l.ownerID, Owner: l.owner, Name: l.name,
		InstallationID: l.installationID, CreatedAt: l.createdAt, RevokedAt: l.revokedAt}
}

func (l repositoryLink) account() AccountRepository {
	return AccountRepository{ID: l.id, AccountID: l.ownerID, Owner: l.owner, Name: l.name,
		InstallationID: l.installationID, CreatedAt: l.createdAt, RevokedAt: l.revokedAt}
}

// scanRepositoryLink reads one row of a repositoryOwner's columns and
// shapes it with as.
func scanRepositoryLink[T any](row rowScanner, as func(repositoryLink) T) (T, error) {
	var l repositoryLink
	var created, revoked dbTime
	if err := row.Scan(&l.id, &l.ownerID, &l.owner, &l.name, &l.installationID, &created, &revoked); err != nil {
		var zero T
		return zero, err
	}
	l.createdAt, l.revokedAt = created.t, revoked.ptr()
	return as(l), nil
}

// linkRepository checks and stores a new link of owner/name, read through
// installationID, for the owner ownerID, which must exist, and returns it
// shaped with as.
func linkRepository[T any](ctx context.Context, s *sqlStore, o repositoryOwner, as func(repositoryLink) T, ownerID, owner, name string, installationID int64) (T, error) {
	var zero T
	if err := ValidateGitHubOwner(owner); err != nil {
		return zero, err
	}
	if err := ValidateGitHubRepositoryName(name); err != nil {
		return zero, err
	}
	if installationID <= 0 {
		return zero, invalid("github_installation_id", "must be a positive integer")
	}
	l := repositoryLink{id: newID(o.idPrefix), ownerID: ownerID, owner: owner, name: name,
		installationID: installationID, createdAt: s.now()}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, o.kind, `SELECT 1 FROM `+o.owners+` WHERE id = $1`, ownerID); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "linking "+o.what,
			`INSERT INTO `+o.table+` (id, `+o.column+`, owner, name, github_installation_id, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6)`,
			l.id, ownerID, owner, name, installationID, s.d.timeArg(l.createdAt))
		return err
	})
	if err != nil {
		return zero, err
	}
	return as(l), nil
}

// getRepositoryLink reads the link id of the owner ownerID (anything else,
// another owner's included, is ErrNotFound); lock appends the dialect's FOR
// SHARE, holding the row until the transaction ends.
func getRepositoryLink[T any](ctx context.Context, s *sqlStore, q queryer, o repositoryOwner, scan func(rowScanner) (T, error), ownerID, id string, lock bool) (T, error) {
	query := `SELECT ` + o.columns + ` FROM ` + o.table + ` r WHERE r.` + o.column + ` = $1 AND r.id = $2`
	if lock {
		query += s.d.forShare()
	}
	r, err := scan(q.QueryRowContext(ctx, query, ownerID, id))
	if err != nil {
		var zero T
		return zero, notFound(err, o.what)
	}
	return r, nil
}

// findRepositoryLink reads the active link of owner/name (GitHub names are
// compared without case) of the owner ownerID, or ErrNotFound.
func findRepositoryLink[T any](ctx context.Context, s *sqlStore, o repositoryOwner, scan func(rowScanner) (T, error), ownerID, owner, name string) (T, error) {
	r, err := scan(s.db.QueryRowContext(ctx,
		`SELECT `+o.columns+` FROM `+o.table+` r
		 WHERE r.`+o.column+` = $1 AND lower(r.owner) = lower($2) AND lower(r.name) = lower($3)
		   AND r.revoked_at IS NULL`,
		ownerID, owner, name))
	if err != nil {
		var zero T
		return zero, notFound(err, o.what)
	}
	return r, nil
}
