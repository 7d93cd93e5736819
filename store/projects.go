package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// CreateAccount implements AccountStore.
func (s *sqlStore) CreateAccount(ctx context.Context, name string) (Account, error) {
	if err := validateName("name", name); err != nil {
		return Account{}, err
	}
	a := Account{ID: newID("acc"), Name: name, CreatedAt: s.now()}
	_, err := s.exec(ctx, s.db, "creating account",
		`INSERT INTO accounts (id, name, created_at) VALUES ($1, $2, $3)`,
		a.ID, a.Name, s.d.timeArg(a.CreatedAt))
	if err != nil {
		return Account{}, err
	}
	return a, nil
}

// GetAccount implements AccountStore.
func (s *sqlStore) GetAccount(ctx context.Context, accountID string) (Account, error) {
	var a Account
	var created dbTime
	err := s.db.QueryRowContext(ctx,
		`SELECT id, name, created_at FROM accounts WHERE id = $1`, accountID).
		Scan(&a.ID, &a.Name, &created)
	if err != nil {
		return Account{}, notFound(err, "account")
	}
	a.CreatedAt = created.t
	return a, nil
}

// defaultAccountID returns the ID of the default account, creating it if it
// does not exist; concurrent callers all get the one row.
func (s *sqlStore) defaultAccountID(ctx context.Context, tx *sql.Tx) (string, error) {
	if _, err := s.exec(ctx, tx, "creating default account",
		`INSERT INTO accounts (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		newID("acc"), DefaultAccountName, s.d.timeArg(s.now())); err != nil {
		return "", err
	}
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM accounts WHERE name = $1`, DefaultAccountName).Scan(&id)
	if err != nil {
		return "", notFound(err, "default account")
	}
	return id, nil
}

// CreateProject implements ProjectStore.
func (s *sqlStore) CreateProject(ctx context.Context, accountID, name string) (Project, error) {
	if err := validateName("name", name); err != nil {
		return Project{}, err
	}
	p := Project{ID: newID("prj"), AccountID: accountID, Name: name, CreatedAt: s.now()}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if p.AccountID == "" {
			id, err := s.defaultAccountID(ctx, tx)
			if err != nil {
				return err
			}
			p.AccountID = id
		} else if err := exists(ctx, tx, "account", `SELECT 1 FROM accounts WHERE id = $1`, p.AccountID); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "creating project",
			`INSERT INTO projects (id, account_id, name, created_at) VALUES ($1, $2, $3, $4)`,
			p.ID, p.AccountID, p.Name, s.d.timeArg(p.CreatedAt))
		return err
	})
	if err != nil {
		return Project{}, err
	}
	return p, nil
}

const projectColumns = `p.id, p.account_id, p.name, p.created_at`

func scanProject(row rowScanner) (Project, error) {
	var p Project
	var created dbTime
	if err := row.Scan(&p.ID, &p.AccountID, &p.Name, &created); err != nil {
		return Project{}, err
	}
	p.CreatedAt = created.t
	return p, nil
}

// GetProject implements ProjectStore.
func (s *sqlStore) GetProject(ctx context.Context, projectID string) (Project, error) {
	p, err := scanProject(s.db.QueryRowContext(ctx,
		`SELECT `+projectColumns+` FROM projects p WHERE p.id = $1`, projectID))
	if err != nil {
		return Project{}, notFound(err, "project")
	}
	return p, nil
}

// ListProjects implements ProjectStore.
func (s *sqlStore) ListProjects(ctx context.Context, accountID string) ([]Project, error) {
	if accountID == "" {
		return s.listProjects(ctx, `SELECT `+projectColumns+` FROM projects p ORDER BY p.name, p.id`)
	}
	return s.listProjects(ctx, `SELECT `+projectColumns+` FROM projects p WHERE p.account_id = $1 ORDER BY p.name, p.id`, accountID)
}

func (s *sqlStore) listProjects(ctx context.Context, query string, args ...any) ([]Project, error) {
	return queryAll(ctx, s.db, "listing projects", scanProject, query, args...)
}

// AddMember implements ProjectStore.
func (s *sqlStore) AddMember(ctx context.Context, projectID, subject string) error {
	if err := validateText("subject", subject, maxSubjectBytes); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, "project", `SELECT 1 FROM projects WHERE id = $1`, projectID); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, "adding member",
			`INSERT INTO project_members (project_id, subject, created_at) VALUES ($1, $2, $3)
			 ON CONFLICT (project_id, subject) DO NOTHING`,
			projectID, subject, s.d.timeArg(s.now()))
		return err
	})
}

// RemoveMember implements ProjectStore.
func (s *sqlStore) RemoveMember(ctx context.Context, projectID, subject string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, "removing member",
			`DELETE FROM project_members WHERE project_id = $1 AND subject = $2`, projectID, subject)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("removing member: %w", err)
		} else if n == 0 {
			return fmt.Errorf("%w: member", ErrNotFound)
		}
		now := s.d.timeArg(s.now())
		if _, err := s.exec(ctx, tx, "revoking the member's tokens",
			`UPDATE oauth_tokens SET revoked_at = $1
			 WHERE revoked_at IS NULL AND grant_id IN
			   (SELECT id FROM oauth_grants WHERE project_id = $2 AND subject = $3)`,
			now, projectID, subject); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, "revoking the member's consents",
			`UPDATE oauth_grants SET revoked_at = $1
			 WHERE project_id = $2 AND subject = $3 AND revoked_at IS NULL`,
			now, projectID, subject)
		return err
	})
}

// IsMember implements ProjectStore.
func (s *sqlStore) IsMember(ctx context.Context, projectID, subject string) (bool, error) {
	err := exists(ctx, s.db, "member",
		`SELECT 1 FROM project_members WHERE project_id = $1 AND subject = $2`, projectID, subject)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	default:
		return false, err
	}
}

// ListProjectsForSubject implements ProjectStore.
func (s *sqlStore) ListProjectsForSubject(ctx context.Context, subject string) ([]Project, error) {
	return s.listProjects(ctx,
		`SELECT `+projectColumns+` FROM projects p
		 JOIN project_members m ON m.project_id = p.id
		 WHERE m.subject = $1 ORDER BY p.name, p.id`, subject)
}

// exists runs a one-row query and returns ErrNotFound naming what when it
// finds nothing.
func exists(ctx context.Context, q queryer, what, query string, args ...any) error {
	var one int
	if err := q.QueryRowContext(ctx, query, args...).Scan(&one); err != nil {
		return notFound(err, what)
	}
	return nil
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, q queryer, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
