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
	idPrefix string
	what     string // "repository": for the error of a failed write
}

var (
	projectRepositories = repositoryOwner{kind: "project", owners: "projects", table: "github_repositories",
		column: "project_id", idPrefix: "rep", what: "repository"}
	accountRepositories = repositoryOwner{kind: "account", owners: "accounts", table: "account_repositories",
		column: "account_id", idPrefix: "arp", what: "account repository"}
)

// linkRepository checks and stores a new link of owner/name, read through
// installationID, for the owner ownerID, which must exist. It returns the
// link's ID and creation time.
func (s *sqlStore) linkRepository(ctx context.Context, o repositoryOwner, ownerID, owner, name string, installationID int64) (string, time.Time, error) {
	if err := ValidateGitHubOwner(owner); err != nil {
		return "", time.Time{}, err
	}
	if err := ValidateGitHubRepositoryName(name); err != nil {
		return "", time.Time{}, err
	}
	if installationID <= 0 {
		return "", time.Time{}, invalid("github_installation_id", "must be a positive integer")
	}
	id, created := newID(o.idPrefix), s.now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, o.kind, `SELECT 1 FROM `+o.owners+` WHERE id = $1`, ownerID); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "linking "+o.what,
			`INSERT INTO `+o.table+` (id, `+o.column+`, owner, name, github_installation_id, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6)`,
			id, ownerID, owner, name, installationID, s.d.timeArg(created))
		return err
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return id, created, nil
}
