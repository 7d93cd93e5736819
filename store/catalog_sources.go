package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// LinkAccountRepository implements CatalogStore.
func (s *sqlStore) LinkAccountRepository(ctx context.Context, accountID, owner, name string, installationID int64) (AccountRepository, error) {
	return linkRepository(ctx, s, accountRepositories, repositoryLink.account, accountID, owner, name, installationID)
}

const accountRepositoryColumns = `r.id, r.account_id, r.owner, r.name, r.github_installation_id, r.created_at, r.revoked_at`

func scanAccountRepository(row rowScanner) (AccountRepository, error) {
	return scanRepositoryLink(row, repositoryLink.account)
}

// getAccountRepository reads a repository of the account; lock holds the
// row until the transaction ends.
func (s *sqlStore) getAccountRepository(ctx context.Context, q queryer, accountID, repositoryID string, lock bool) (AccountRepository, error) {
	return getRepositoryLink(ctx, s, q, accountRepositories, scanAccountRepository, accountID, repositoryID, lock)
}

// FindAccountRepository implements CatalogStore.
func (s *sqlStore) FindAccountRepository(ctx context.Context, accountID, owner, name string) (AccountRepository, error) {
	return findRepositoryLink(ctx, s, accountRepositories, scanAccountRepository, accountID, owner, name)
}

// RevokeAccountRepository implements CatalogStore.
func (s *sqlStore) RevokeAccountRepository(ctx context.Context, accountID, repositoryID string) (AccountRepository, error) {
	return revokeOnce(ctx, s, revocation{what: "account repository", table: "account_repositories", tenantColumn: "account_id",
		cascade: "instruction_sources", cascadeWhat: "instruction sources"},
		accountID, repositoryID, func(tx *sql.Tx) (AccountRepository, error) {
			return s.getAccountRepository(ctx, tx, accountID, repositoryID, false)
		}, func(r *AccountRepository) **time.Time { return &r.RevokedAt })
}

// validate checks a new instruction source.
func (n *NewInstructionSource) validate() error {
	if err := ValidateInstructionPath(n.Path); err != nil {
		return err
	}
	switch {
	case n.CommitSHA != "" && n.TrackingRef != "":
		return invalid("commit_sha", "give a commit or a tracking branch, not both")
	case n.CommitSHA != "":
		return ValidateCommitSHA(n.CommitSHA)
	case n.TrackingRef != "":
		return ValidateBranch(n.TrackingRef)
	default:
		return invalid("commit_sha", "give a commit or a tracking branch")
	}
}

// AddInstructionSource implements CatalogStore.
func (s *sqlStore) AddInstructionSource(ctx context.Context, n NewInstructionSource) (InstructionSource, error) {
	if err := n.validate(); err != nil {
		return InstructionSource{}, err
	}
	src := InstructionSource{
		ID: newID("ins"), AccountID: n.AccountID, Path: n.Path,
		CommitSHA: n.CommitSHA, TrackingRef: n.TrackingRef, CreatedAt: s.now(),
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Scoped to the account, and held until commit so that a concurrent
		// RevokeAccountRepository waits and then revokes this source too.
		repo, err := s.getAccountRepository(ctx, tx, n.AccountID, n.RepositoryID, true)
		if err != nil {
			return err
		}
		if repo.RevokedAt != nil {
			return invalid("repository", "%s is revoked", repo.ID)
		}
		src.Repository = repo
		_, err = s.exec(ctx, tx, "adding instruction source",
			`INSERT INTO instruction_sources
			   (id, account_id, repository_id, role, path, commit_sha, tracking_ref, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			src.ID, src.AccountID, repo.ID, RoleInstruction, src.Path,
			nullString(src.CommitSHA), nullString(src.TrackingRef), s.d.timeArg(src.CreatedAt))
		return err
	})
	if err != nil {
		return InstructionSource{}, err
	}
	return src, nil
}

const instructionSourceSelect = `SELECT s.id, s.account_id, s.path, s.commit_sha, s.tracking_ref,
       s.created_at, s.revoked_at, ` + accountRepositoryColumns + `
  FROM instruction_sources s
  JOIN account_repositories r ON r.account_id = s.account_id AND r.id = s.repository_id`

func scanInstructionSource(row rowScanner) (InstructionSource, error) {
	var src InstructionSource
	var commit, tracking sql.NullString
	var created, revoked, rCreated, rRevoked dbTime
	r := &src.Repository
	if err := row.Scan(&src.ID, &src.AccountID, &src.Path, &commit, &tracking, &created, &revoked,
		&r.ID, &r.AccountID, &r.Owner, &r.Name, &r.InstallationID, &rCreated, &rRevoked); err != nil {
		return InstructionSource{}, err
	}
	src.CommitSHA, src.TrackingRef = commit.String, tracking.String
	src.CreatedAt, src.RevokedAt = created.t, revoked.ptr()
	r.CreatedAt, r.RevokedAt = rCreated.t, rRevoked.ptr()
	return src, nil
}

// getInstructionSource reads a source of the account; lock holds its
// repository row and then its own row until the transaction ends.
func (s *sqlStore) getInstructionSource(ctx context.Context, q queryer, accountID, sourceID string, lock bool) (InstructionSource, error) {
	query := instructionSourceSelect + ` WHERE s.account_id = $1 AND s.id = $2`
	if lock {
		if err := s.lockRepositoryOf(ctx, q, "instruction_sources", "account_repositories", "account_id", accountID, sourceID); err != nil {
			return InstructionSource{}, err
		}
		query += s.lockSourceRow()
	}
	src, err := scanInstructionSource(q.QueryRowContext(ctx, query, accountID, sourceID))
	if err != nil {
		return InstructionSource{}, notFound(err, "instruction source")
	}
	return src, nil
}

// ListInstructionSources implements CatalogStore.
func (s *sqlStore) ListInstructionSources(ctx context.Context, accountID string, includeRevoked bool) ([]InstructionSource, error) {
	return queryAll(ctx, s.db, "listing instruction sources", scanInstructionSource,
		instructionSourceSelect+` WHERE s.account_id = $1 AND ($2 OR (s.revoked_at IS NULL AND r.revoked_at IS NULL))
		 ORDER BY s.created_at, s.id`,
		accountID, includeRevoked)
}

// RevokeInstructionSource implements CatalogStore.
func (s *sqlStore) RevokeInstructionSource(ctx context.Context, accountID, sourceID string) (InstructionSource, error) {
	return revokeOnce(ctx, s, revocation{what: "instruction source", table: "instruction_sources", tenantColumn: "account_id"},
		accountID, sourceID, func(tx *sql.Tx) (InstructionSource, error) {
			return s.getInstructionSource(ctx, tx, accountID, sourceID, false)
		}, func(src *InstructionSource) **time.Time { return &src.RevokedAt })
}

// SetAccountLayer implements CatalogStore.
func (s *sqlStore) SetAccountLayer(ctx context.Context, accountID, layer, mode, sourceID string) ([]AccountLayer, error) {
	switch layer {
	case LayerCore:
		if mode != "" {
			return nil, invalid("mode", "the core has no mode")
		}
	case LayerMode:
		if err := ValidateMode(mode); err != nil {
			return nil, err
		}
	default:
		return nil, invalid("layer", "%s: want core or mode", quote(layer))
	}
	var out []AccountLayer
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, "account", `SELECT 1 FROM accounts WHERE id = $1`, accountID); err != nil {
			return err
		}
		if sourceID == "" {
			if _, err := s.exec(ctx, tx, "clearing account layer",
				`DELETE FROM account_instruction_layers WHERE account_id = $1 AND layer = $2 AND mode = $3`,
				accountID, layer, mode); err != nil {
				return err
			}
		} else {
			src, err := s.getInstructionSource(ctx, tx, accountID, sourceID, true)
			if err != nil {
				return err
			}
			if !src.Active() {
				return invalid("source_id", "%s is revoked", src.ID)
			}
			if _, err := s.exec(ctx, tx, "setting account layer",
				`INSERT INTO account_instruction_layers (account_id, layer, mode, source_id, updated_at)
				 VALUES ($1, $2, $3, $4, $5)
				 ON CONFLICT (account_id, layer, mode) DO UPDATE SET source_id = $4, updated_at = $5`,
				accountID, layer, mode, sourceID, s.d.timeArg(s.now())); err != nil {
				return err
			}
		}
		var err error
		out, err = s.listAccountLayers(ctx, tx, accountID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListAccountLayers implements CatalogStore.
func (s *sqlStore) ListAccountLayers(ctx context.Context, accountID string) ([]AccountLayer, error) {
	return s.listAccountLayers(ctx, s.db, accountID)
}

func (s *sqlStore) listAccountLayers(ctx context.Context, q queryer, accountID string) ([]AccountLayer, error) {
	return queryAll(ctx, q, "listing account layers", func(row rowScanner) (AccountLayer, error) {
		var l AccountLayer
		var updated dbTime
		err := row.Scan(&l.AccountID, &l.Layer, &l.Mode, &l.SourceID, &updated)
		l.UpdatedAt = updated.t
		return l, err
	}, `SELECT account_id, layer, mode, source_id, updated_at FROM account_instruction_layers
	    WHERE account_id = $1 ORDER BY layer, mode`, accountID)
}

// lockSourceRow is the locking clause of a source read joined with its
// repository (aliases s and r): it holds the source row. Callers first hold
// the repository row with lockRepositoryOf.
func (s *sqlStore) lockSourceRow() string {
	if clause := s.d.forShare(); clause != "" {
		return clause + " OF s"
	}
	return ""
}

// lockRepositoryOf holds the repository row of a source before the source
// row is held. Revocations take the repository first and its sources second
// (RevokeRepository, RevokeAccountRepository), so a reader that held a
// source and then waited for its repository could deadlock with them;
// taking the same order makes the one wait for the other instead. table
// and repoTable are the source and repository tables, tenant their tenant
// column ("account_id" or "project_id"). SQLite needs nothing: its
// transactions exclude each other whole.
func (s *sqlStore) lockRepositoryOf(ctx context.Context, q queryer, table, repoTable, tenant, tenantID, sourceID string) error {
	clause := s.d.forShare()
	if clause == "" {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT r.id FROM `+repoTable+` r
	  WHERE r.`+tenant+` = $1 AND r.id = (SELECT s.repository_id FROM `+table+` s WHERE s.`+tenant+` = $1 AND s.id = $2)`+clause,
		tenantID, sourceID)
	if err != nil {
		return fmt.Errorf("locking the repository of %s: %w", sourceID, err)
	}
	return rows.Close()
}
