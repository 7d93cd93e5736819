package store

import (
	"context"
	"database/sql"
	"time"
)

// validate checks a new source and fills in the default fragment limit.
func (n *NewDocumentSource) validate() error {
	if err := ValidateRole(n.Role); err != nil {
		return err
	}
	if err := ValidateDocumentPath(n.Path); err != nil {
		return err
	}
	switch {
	case n.CommitSHA != "" && n.TrackingRef != "":
		return invalid("commit_sha", "give a commit or a tracking branch, not both")
	case n.CommitSHA != "":
		if err := ValidateCommitSHA(n.CommitSHA); err != nil {
			return err
		}
	case n.TrackingRef != "":
		if err := ValidateBranch(n.TrackingRef); err != nil {
			return err
		}
	default:
		return invalid("commit_sha", "give a commit or a tracking branch")
	}
	if n.FragmentLimit == 0 {
		n.FragmentLimit = MaxFragmentLimit
	}
	if n.FragmentLimit < 1 || n.FragmentLimit > MaxFragmentLimit {
		return invalid("fragment_limit", "%d: want 1 to %d", n.FragmentLimit, MaxFragmentLimit)
	}
	return nil
}

// AddDocumentSource implements DocumentSourceStore.
func (s *sqlStore) AddDocumentSource(ctx context.Context, n NewDocumentSource) (DocumentSource, error) {
	if err := n.validate(); err != nil {
		return DocumentSource{}, err
	}
	src := DocumentSource{
		ID: newID("src"), ProjectID: n.ProjectID, Role: n.Role, Path: n.Path,
		CommitSHA: n.CommitSHA, TrackingRef: n.TrackingRef, FragmentLimit: n.FragmentLimit,
		CreatedAt: s.now(),
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// The lookup is scoped to the project, so another project's
		// repository is "not found"; the composite foreign key enforces the
		// same rule in the schema. The row stays locked until commit, so a
		// concurrent RevokeRepository waits and then revokes this source too.
		repo, err := s.getRepository(ctx, tx, n.ProjectID, n.RepositoryID, true)
		if err != nil {
			return err
		}
		if repo.RevokedAt != nil {
			return invalid("repository", "%s is revoked", repo.ID)
		}
		src.Repository = repo
		_, err = s.exec(ctx, tx, "adding document source",
			`INSERT INTO document_sources
			   (id, project_id, repository_id, role, path, commit_sha, tracking_ref, fragment_limit, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			src.ID, src.ProjectID, repo.ID, src.Role, src.Path,
			nullString(src.CommitSHA), nullString(src.TrackingRef), src.FragmentLimit,
			s.d.timeArg(src.CreatedAt))
		return err
	})
	if err != nil {
		return DocumentSource{}, err
	}
	return src, nil
}

// sourceSelect joins each source with its repository; callers add WHERE
// conditions on s (source) and r (repository).
const sourceSelect = `SELECT s.id, s.project_id, s.role, s.path, s.commit_sha, s.tracking_ref,
       s.fragment_limit, s.created_at, s.revoked_at, ` + repositoryColumns + `
  FROM document_sources s
  JOIN github_repositories r ON r.project_id = s.project_id AND r.id = s.repository_id`

func scanSource(row rowScanner) (DocumentSource, error) {
	var src DocumentSource
	var commit, tracking sql.NullString
	var created, revoked dbTime
	var r Repository
	var rCreated, rRevoked dbTime
	if err := row.Scan(&src.ID, &src.ProjectID, &src.Role, &src.Path, &commit, &tracking,
		&src.FragmentLimit, &created, &revoked,
		&r.ID, &r.ProjectID, &r.Owner, &r.Name, &r.InstallationID, &rCreated, &rRevoked); err != nil {
		return DocumentSource{}, err
	}
	src.CommitSHA, src.TrackingRef = commit.String, tracking.String
	src.CreatedAt, src.RevokedAt = created.t, revoked.ptr()
	r.CreatedAt, r.RevokedAt = rCreated.t, rRevoked.ptr()
	src.Repository = r
	return src, nil
}

// GetDocumentSource implements DocumentSourceStore.
func (s *sqlStore) GetDocumentSource(ctx context.Context, projectID, sourceID string) (DocumentSource, error) {
	return s.getSource(ctx, s.prepared, projectID, sourceID)
}

func (s *sqlStore) getSource(ctx context.Context, q queryer, projectID, sourceID string) (DocumentSource, error) {
	src, err := scanSource(q.QueryRowContext(ctx,
		sourceSelect+` WHERE s.project_id = $1 AND s.id = $2`, projectID, sourceID))
	if err != nil {
		return DocumentSource{}, notFound(err, "document source")
	}
	return src, nil
}

// ListDocumentSources implements DocumentSourceStore.
func (s *sqlStore) ListDocumentSources(ctx context.Context, projectID string, includeRevoked bool) ([]DocumentSource, error) {
	return queryAll(ctx, s.prepared, "listing document sources", scanSource,
		sourceSelect+` WHERE s.project_id = $1 AND ($2 OR (s.revoked_at IS NULL AND r.revoked_at IS NULL))
		 ORDER BY s.created_at, s.id`,
		projectID, includeRevoked)
}

// ListActiveSourcesByRole implements DocumentSourceStore.
func (s *sqlStore) ListActiveSourcesByRole(ctx context.Context, projectID, role string) ([]DocumentSource, error) {
	return queryAll(ctx, s.db, "listing document sources", scanSource,
		sourceSelect+` WHERE s.project_id = $1 AND s.role = $2
		   AND s.revoked_at IS NULL AND r.revoked_at IS NULL
		 ORDER BY s.created_at, s.id`,
		projectID, role)
}

// RevokeDocumentSource implements DocumentSourceStore.
func (s *sqlStore) RevokeDocumentSource(ctx context.Context, projectID, sourceID string) (DocumentSource, error) {
	return revokeOnce(ctx, s, revocation{what: "document source", table: "document_sources", tenantColumn: "project_id"},
		projectID, sourceID, func(tx *sql.Tx) (DocumentSource, error) { return s.getSource(ctx, tx, projectID, sourceID) },
		func(src *DocumentSource) **time.Time { return &src.RevokedAt })
}

// nullString stores "" as NULL.
func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}
