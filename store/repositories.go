package store

import (
	"context"
	"database/sql"
	"time"
)

// LinkRepository implements RepositoryStore.
func (s *sqlStore) LinkRepository(ctx context.Context, projectID, owner, name string, installationID int64) (Repository, error) {
	return linkRepository(ctx, s, projectRepositories, repositoryLink.project, projectID, owner, name, installationID)
}

const repositoryColumns = `r.id, r.project_id, r.owner, r.name, r.github_installation_id, r.created_at, r.revoked_at`

func scanRepository(row rowScanner) (Repository, error) {
	return scanRepositoryLink(row, repositoryLink.project)
}

// GetRepository implements RepositoryStore.
func (s *sqlStore) GetRepository(ctx context.Context, projectID, repositoryID string) (Repository, error) {
	return s.getRepository(ctx, s.db, projectID, repositoryID, false)
}

// getRepository reads a repository of the project; lock appends the
// dialect's FOR SHARE, holding the row until the transaction ends.
func (s *sqlStore) getRepository(ctx context.Context, q queryer, projectID, repositoryID string, lock bool) (Repository, error) {
	return getRepositoryLink(ctx, s, q, projectRepositories, scanRepository, projectID, repositoryID, lock)
}

// FindRepository implements RepositoryStore.
func (s *sqlStore) FindRepository(ctx context.Context, projectID, owner, name string) (Repository, error) {
	return findRepositoryLink(ctx, s, projectRepositories, scanRepository, projectID, owner, name)
}

// ListRepositories implements RepositoryStore.
func (s *sqlStore) ListRepositories(ctx context.Context, projectID string, includeRevoked bool) ([]Repository, error) {
	return queryAll(ctx, s.db, "listing repositories", scanRepository,
		`SELECT `+repositoryColumns+` FROM github_repositories r
		 WHERE r.project_id = $1 AND ($2 OR r.revoked_at IS NULL)
		 ORDER BY lower(r.owner), lower(r.name), r.created_at, r.id`,
		projectID, includeRevoked)
}

// RevokeRepository implements RepositoryStore.
func (s *sqlStore) RevokeRepository(ctx context.Context, projectID, repositoryID string) (Repository, error) {
	return revokeOnce(ctx, s, revocation{what: "repository", table: "github_repositories", tenantColumn: "project_id",
		cascade: "document_sources", cascadeWhat: "sources"},
		projectID, repositoryID, func(tx *sql.Tx) (Repository, error) { return s.getRepository(ctx, tx, projectID, repositoryID, false) },
		func(r *Repository) **time.Time { return &r.RevokedAt })
}
