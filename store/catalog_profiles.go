package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CreateProfile implements CatalogStore.
func (s *sqlStore) CreateProfile(ctx context.Context, n NewCatalogProfile) (CatalogProfile, error) {
	if err := validateName("name", n.Name); err != nil {
		return CatalogProfile{}, err
	}
	if n.Mode == "" {
		n.Mode = DefaultMode
	}
	if err := ValidateMode(n.Mode); err != nil {
		return CatalogProfile{}, err
	}
	p := CatalogProfile{ID: newID("prf"), AccountID: n.AccountID, ProjectID: n.ProjectID, Name: n.Name, Mode: n.Mode, CreatedAt: s.now()}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		switch {
		case p.ProjectID != "":
			var account string
			if err := tx.QueryRowContext(ctx, `SELECT account_id FROM projects WHERE id = $1`, p.ProjectID).Scan(&account); err != nil {
				return notFound(err, "project")
			}
			if p.AccountID != "" && p.AccountID != account {
				return invalid("account_id", "project %s belongs to another account", p.ProjectID)
			}
			p.AccountID = account
		case p.AccountID != "":
			if err := exists(ctx, tx, "account", `SELECT 1 FROM accounts WHERE id = $1`, p.AccountID); err != nil {
				return err
			}
		default:
			return invalid("account_id", "give a project or an account")
		}
		_, err := s.exec(ctx, tx, "creating profile",
			`INSERT INTO catalog_profiles (id, account_id, project_id, name, mode, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6)`,
			p.ID, p.AccountID, nullString(p.ProjectID), p.Name, p.Mode, s.d.timeArg(p.CreatedAt))
		return err
	})
	if err != nil {
		return CatalogProfile{}, err
	}
	return p, nil
}

const profileColumns = `p.id, p.account_id, p.project_id, p.name, p.mode, p.created_at`

func scanProfile(row rowScanner) (CatalogProfile, error) {
	var p CatalogProfile
	var project sql.NullString
	var created dbTime
	if err := row.Scan(&p.ID, &p.AccountID, &project, &p.Name, &p.Mode, &created); err != nil {
		return CatalogProfile{}, err
	}
	p.ProjectID, p.CreatedAt = project.String, created.t
	return p, nil
}

// SetProfileLayer implements CatalogStore.
func (s *sqlStore) SetProfileLayer(ctx context.Context, profileID, layer string, sourceIDs []string) (CatalogProfile, error) {
	if err := ValidateProfileLayer(layer); err != nil {
		return CatalogProfile{}, err
	}
	max := 1
	if MultiSourceLayer(layer) {
		max = MaxLayerSources
	}
	if len(sourceIDs) > max {
		return CatalogProfile{}, invalid("source_id", "layer %s takes at most %d source(s), got %d", layer, max, len(sourceIDs))
	}
	for i, id := range sourceIDs {
		if slices.Contains(sourceIDs[:i], id) {
			return CatalogProfile{}, invalid("source_id", "%s is named twice", quote(id))
		}
	}
	var out CatalogProfile
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		p, err := scanProfile(tx.QueryRowContext(ctx, `SELECT `+profileColumns+` FROM catalog_profiles p WHERE p.id = $1`, profileID))
		if err != nil {
			return notFound(err, "profile")
		}
		if _, err := s.exec(ctx, tx, "clearing profile layer",
			`DELETE FROM catalog_profile_layers WHERE profile_id = $1 AND layer = $2`, p.ID, layer); err != nil {
			return err
		}
		for i, id := range sourceIDs {
			var instruction, document sql.NullString
			switch {
			case strings.HasPrefix(id, "ins_"):
				src, err := s.getInstructionSource(ctx, tx, p.AccountID, id, true)
				if err != nil {
					return err
				}
				if !src.Active() {
					return invalid("source_id", "%s is revoked", id)
				}
				instruction = nullString(id)
			case strings.HasPrefix(id, "src_") && p.ProjectID != "":
				// Scoped to the profile's own project: another project's
				// source is "not found" here, and the composite foreign key
				// refuses it in the schema as well.
				src, err := s.documentSource(ctx, tx, p.ProjectID, id, true)
				if err != nil {
					return err
				}
				if !src.Active() {
					return invalid("source_id", "%s is revoked", id)
				}
				if src.Role != RoleInstruction {
					return invalid("source_id", "%s has role %q; profile layers take %q sources", id, src.Role, RoleInstruction)
				}
				document = nullString(id)
			default:
				return fmt.Errorf("%w: source %s (an account instruction source, or a document source of the profile's project)", ErrNotFound, quote(id))
			}
			if _, err := s.exec(ctx, tx, "setting profile layer",
				`INSERT INTO catalog_profile_layers
				   (profile_id, account_id, project_id, layer, position, instruction_source_id, document_source_id)
				 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				p.ID, p.AccountID, nullString(p.ProjectID), layer, i+1, instruction, document); err != nil {
				return err
			}
		}
		if p.Layers, err = s.profileLayers(ctx, tx, p, p.ProjectID, false); err != nil {
			return err
		}
		out = p
		return nil
	})
	if err != nil {
		return CatalogProfile{}, err
	}
	return out, nil
}

// documentSource reads a document source of the project as a catalog
// source; lock holds its repository row and then its own row until the
// transaction ends.
func (s *sqlStore) documentSource(ctx context.Context, q queryer, projectID, sourceID string, lock bool) (DocumentSource, error) {
	query := sourceSelect + ` WHERE s.project_id = $1 AND s.id = $2`
	if lock {
		if err := s.lockRepositoryOf(ctx, q, "document_sources", "github_repositories", "project_id", projectID, sourceID); err != nil {
			return DocumentSource{}, err
		}
		query += s.lockSourceRow()
	}
	src, err := scanSource(q.QueryRowContext(ctx, query, projectID, sourceID))
	if err != nil {
		return DocumentSource{}, notFound(err, "document source")
	}
	return src, nil
}

// catalogSource loads a source by scope: an instruction source of the
// account, or a document source of the project. These two conditions are
// the tenant check of every catalog read.
func (s *sqlStore) catalogSource(ctx context.Context, q queryer, accountID, projectID, scope, id string, lock bool) (CatalogSource, error) {
	switch scope {
	case ScopeAccount:
		src, err := s.getInstructionSource(ctx, q, accountID, id, lock)
		if err != nil {
			return CatalogSource{}, err
		}
		return CatalogSource{
			Scope: ScopeAccount, ID: src.ID, RepositoryID: src.Repository.ID,
			Owner: src.Repository.Owner, Name: src.Repository.Name, InstallationID: src.Repository.InstallationID,
			Path: src.Path, CommitSHA: src.CommitSHA, TrackingRef: src.TrackingRef,
			RevokedAt: src.RevokedAt, RepositoryRevokedAt: src.Repository.RevokedAt,
		}, nil
	case ScopeProject:
		if projectID == "" {
			return CatalogSource{}, fmt.Errorf("%w: document source %s outside a project", ErrNotFound, quote(id))
		}
		src, err := s.documentSource(ctx, q, projectID, id, lock)
		if err != nil {
			return CatalogSource{}, err
		}
		return CatalogSource{
			Scope: ScopeProject, ID: src.ID, RepositoryID: src.Repository.ID,
			Owner: src.Repository.Owner, Name: src.Repository.Name, InstallationID: src.Repository.InstallationID,
			Path: src.Path, CommitSHA: src.CommitSHA, TrackingRef: src.TrackingRef,
			RevokedAt: src.RevokedAt, RepositoryRevokedAt: src.Repository.RevokedAt,
		}, nil
	}
	return CatalogSource{}, fmt.Errorf("store: unknown source scope %q", scope)
}

// profileLayers loads the layers of a profile in assembly order, each
// source read within the profile's account and within projectID (the
// caller's project; "" for an account-wide profile).
func (s *sqlStore) profileLayers(ctx context.Context, q queryer, p CatalogProfile, projectID string, lock bool) ([]PlanLayer, error) {
	type row struct {
		layer                 string
		position              int
		instruction, document sql.NullString
	}
	query := `SELECT layer, position, instruction_source_id, document_source_id
	            FROM catalog_profile_layers WHERE profile_id = $1 AND account_id = $2`
	if lock {
		query += s.d.forShare()
	}
	rows, err := queryAll(ctx, q, "listing profile layers", func(r rowScanner) (row, error) {
		var v row
		err := r.Scan(&v.layer, &v.position, &v.instruction, &v.document)
		return v, err
	}, query, p.ID, p.AccountID)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b row) int {
		if d := slices.Index(LayerOrder, a.layer) - slices.Index(LayerOrder, b.layer); d != 0 {
			return d
		}
		return a.position - b.position
	})
	out := make([]PlanLayer, 0, len(rows))
	for _, r := range rows {
		scope, id := ScopeAccount, r.instruction.String
		if r.document.Valid {
			scope, id = ScopeProject, r.document.String
		}
		src, err := s.catalogSource(ctx, q, p.AccountID, projectID, scope, id, lock)
		if err != nil {
			// The schema ties every layer to its tenant; a source outside it
			// is a broken invariant, never served.
			return nil, fmt.Errorf("profile %s layer %s: %w", p.ID, r.layer, err)
		}
		out = append(out, PlanLayer{Layer: r.layer, Position: r.position, Source: src})
	}
	return out, nil
}

// GetProfile implements CatalogStore.
func (s *sqlStore) GetProfile(ctx context.Context, profileID string) (CatalogProfile, error) {
	p, err := scanProfile(s.db.QueryRowContext(ctx, `SELECT `+profileColumns+` FROM catalog_profiles p WHERE p.id = $1`, profileID))
	if err != nil {
		return CatalogProfile{}, notFound(err, "profile")
	}
	if p.Layers, err = s.profileLayers(ctx, s.db, p, p.ProjectID, false); err != nil {
		return CatalogProfile{}, err
	}
	return p, nil
}

// ListProfiles implements CatalogStore.
func (s *sqlStore) ListProfiles(ctx context.Context, accountID, projectID string) ([]CatalogProfile, error) {
	var ps []CatalogProfile
	var err error
	if projectID != "" {
		if accountID, err = s.projectAccount(ctx, s.prepared, projectID); err != nil {
			return nil, err
		}
		ps, err = queryAll(ctx, s.prepared, "listing profiles", scanProfile,
			`SELECT `+profileColumns+` FROM catalog_profiles p
			 WHERE p.account_id = $1 AND (p.project_id IS NULL OR p.project_id = $2)
			 ORDER BY p.name, p.project_id IS NULL, p.id`, accountID, projectID)
	} else {
		ps, err = queryAll(ctx, s.prepared, "listing profiles", scanProfile,
			`SELECT `+profileColumns+` FROM catalog_profiles p WHERE p.account_id = $1
			 ORDER BY p.name, p.project_id IS NULL, p.id`, accountID)
	}
	if err != nil {
		return nil, err
	}
	for i := range ps {
		if ps[i].Layers, err = s.profileLayers(ctx, s.prepared, ps[i], ps[i].ProjectID, false); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// projectAccount returns the account of a project, or ErrNotFound.
func (s *sqlStore) projectAccount(ctx context.Context, q queryer, projectID string) (string, error) {
	var account string
	if err := q.QueryRowContext(ctx, `SELECT account_id FROM projects WHERE id = $1`, projectID).Scan(&account); err != nil {
		return "", notFound(err, "project")
	}
	return account, nil
}

// CatalogPlan implements CatalogStore.
func (s *sqlStore) CatalogPlan(ctx context.Context, projectID, profileID string) (CatalogPlan, error) {
	return s.catalogPlan(ctx, s.prepared, projectID, profileID, false)
}

// catalogPlan reads a plan; lock holds every row it read (profile, layer
// rows, configuration, repositories and sources, each repository before its
// sources) until the transaction ends, so that a revocation or
// reconfiguration waits for it.
func (s *sqlStore) catalogPlan(ctx context.Context, q queryer, projectID, profileID string, lock bool) (CatalogPlan, error) {
	account, err := s.projectAccount(ctx, q, projectID)
	if err != nil {
		return CatalogPlan{}, err
	}
	query := `SELECT ` + profileColumns + ` FROM catalog_profiles p
	           WHERE p.id = $1 AND p.account_id = $2 AND (p.project_id IS NULL OR p.project_id = $3)`
	if lock {
		query += s.d.forShare()
	}
	p, err := scanProfile(q.QueryRowContext(ctx, query, profileID, account, projectID))
	if err != nil {
		return CatalogPlan{}, notFound(err, "profile")
	}
	if p.Layers, err = s.profileLayers(ctx, q, p, projectID, lock); err != nil {
		return CatalogPlan{}, err
	}
	plan := CatalogPlan{ProjectID: projectID, Profile: p}
	for _, key := range []struct{ layer, mode string }{{LayerCore, ""}, {LayerMode, p.Mode}} {
		query := `SELECT source_id FROM account_instruction_layers WHERE account_id = $1 AND layer = $2 AND mode = $3`
		if lock {
			query += s.d.forShare()
		}
		var id string
		err := q.QueryRowContext(ctx, query, account, key.layer, key.mode).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			continue // reported in Missing
		} else if err != nil {
			return CatalogPlan{}, fmt.Errorf("reading the account's %s: %w", key.layer, err)
		}
		src, err := s.catalogSource(ctx, q, account, projectID, ScopeAccount, id, lock)
		if err != nil {
			return CatalogPlan{}, fmt.Errorf("account %s %s: %w", account, key.layer, err)
		}
		plan.Layers = append(plan.Layers, PlanLayer{Layer: key.layer, Position: 1, Source: src})
	}
	plan.Layers = append(plan.Layers, p.Layers...)
	plan.Missing = missingLayers(layerSet(plan.Layers))
	return plan, nil
}
