package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// validate checks that the frozen layers answer the plan one to one and
// hold what a replay needs.
func (w *NewWorkflow) validate() error {
	if w.Plan.ProjectID == "" || w.Plan.Profile.ID == "" {
		return invalid("plan", "no project or profile")
	}
	if len(w.Layers) != len(w.Plan.Layers) {
		return invalid("layers", "%d frozen layers for a plan of %d", len(w.Layers), len(w.Plan.Layers))
	}
	for i, l := range w.Layers {
		p := w.Plan.Layers[i]
		if l.Layer != p.Layer || l.Position != p.Position || l.Source.Scope != p.Source.Scope || l.Source.ID != p.Source.ID {
			return invalid("layers", "frozen layer %d is not the plan's %s/%d", i+1, p.Layer, p.Position)
		}
		if err := ValidateCommitSHA(l.CommitSHA); err != nil {
			return err
		}
		if len(l.SHA256) != 64 || strings.Trim(l.SHA256, "0123456789abcdef") != "" {
			return invalid("sha256", "layer %s: want 64 lowercase hex characters", l.Layer)
		}
		if l.Bytes < 0 || l.Chars < 0 || l.Chars > l.Bytes {
			return invalid("chars", "layer %s: %d characters in %d bytes", l.Layer, l.Chars, l.Bytes)
		}
	}
	if err := validateText("grant_id", w.ConsentID, maxSubjectBytes); err != nil {
		return err
	}
	return validateText("subject", w.Subject, maxSubjectBytes)
}

// CreateWorkflow implements CatalogStore.
func (s *sqlStore) CreateWorkflow(ctx context.Context, n NewWorkflow) (Workflow, error) {
	if err := n.validate(); err != nil {
		return Workflow{}, err
	}
	w := Workflow{
		ID: newID("wfl"), ProjectID: n.Plan.ProjectID, ProfileID: n.Plan.Profile.ID,
		ProfileName: n.Plan.Profile.Name, Mode: n.Plan.Profile.Mode,
		LayersMissing: append([]string{}, n.Plan.Missing...),
		ConsentID:     n.ConsentID, Subject: n.Subject, CreatedAt: s.now(), Layers: n.Layers,
	}
	for _, l := range n.Layers {
		w.SourceBytes += l.Bytes
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// The re-check: read the plan again inside the transaction that
		// stores the contract, holding every row it reads, so a revocation
		// or reconfiguration either landed before (and is refused here) or
		// waits until this workflow is stored.
		fresh, err := s.catalogPlan(ctx, tx, n.Plan.ProjectID, n.Plan.Profile.ID, true)
		if err != nil {
			return err
		}
		for _, l := range fresh.Layers {
			if !l.Source.Active() {
				return &CatalogCheckError{Err: ErrRevoked, Layer: l.Layer, SourceID: l.Source.ID}
			}
		}
		if fresh.fingerprint() != n.Plan.fingerprint() {
			return &CatalogCheckError{Err: ErrCatalogChanged}
		}
		if _, err := s.exec(ctx, tx, "storing workflow",
			`INSERT INTO workflows (id, project_id, profile_id, profile_name, mode, layers_missing,
			                        source_bytes, grant_id, subject, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			w.ID, w.ProjectID, w.ProfileID, w.ProfileName, w.Mode, strings.Join(w.LayersMissing, " "),
			w.SourceBytes, w.ConsentID, w.Subject, s.d.timeArg(w.CreatedAt)); err != nil {
			return err
		}
		for i, l := range n.Layers {
			if _, err := s.exec(ctx, tx, "storing workflow layer",
				`INSERT INTO workflow_layers (workflow_id, ordinal, layer, position, source_scope, source_id,
				                              repository_id, owner, name, path, tracking_ref, commit_sha,
				                              sha256, bytes, chars)
				 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
				w.ID, i+1, l.Layer, l.Position, l.Source.Scope, l.Source.ID,
				l.Source.RepositoryID, l.Source.Owner, l.Source.Name, l.Source.Path, nullString(l.Source.TrackingRef),
				l.CommitSHA, l.SHA256, l.Bytes, l.Chars); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Workflow{}, err
	}
	return w, nil
}

const workflowColumns = `w.id, w.project_id, w.profile_id, w.profile_name, w.mode, w.layers_missing,
       w.source_bytes, w.grant_id, w.subject, w.created_at`

func scanWorkflow(row rowScanner) (Workflow, error) {
	var w Workflow
	var missing string
	var created dbTime
	if err := row.Scan(&w.ID, &w.ProjectID, &w.ProfileID, &w.ProfileName, &w.Mode, &missing,
		&w.SourceBytes, &w.ConsentID, &w.Subject, &created); err != nil {
		return Workflow{}, err
	}
	w.LayersMissing = strings.Fields(missing)
	if w.LayersMissing == nil {
		w.LayersMissing = []string{}
	}
	w.CreatedAt = created.t
	return w, nil
}

// GetWorkflow implements CatalogStore.
func (s *sqlStore) GetWorkflow(ctx context.Context, projectID, workflowID string) (Workflow, error) {
	// The layers are read before the workflow row, outside a transaction:
	// a workflow and its layers are stored together and purged together,
	// so a workflow row still there after its layers were read had every
	// layer when they were read. In the other order, a purge committing in
	// between would yield a workflow without layers (and an empty replay);
	// this way it is not_found.
	layers, err := queryAll(ctx, s.prepared, "reading workflow layers", func(row rowScanner) (FrozenLayer, error) {
		var l FrozenLayer
		var tracking sql.NullString
		err := row.Scan(&l.Layer, &l.Position, &l.Source.Scope, &l.Source.ID, &l.Source.RepositoryID,
			&l.Source.Owner, &l.Source.Name, &l.Source.Path, &tracking, &l.CommitSHA, &l.SHA256, &l.Bytes, &l.Chars)
		l.Source.TrackingRef = tracking.String
		if tracking.String == "" {
			l.Source.CommitSHA = l.CommitSHA
		}
		return l, err
	}, `SELECT layer, position, source_scope, source_id, repository_id, owner, name, path, tracking_ref,
	           commit_sha, sha256, bytes, chars
	      FROM workflow_layers WHERE workflow_id = $1 ORDER BY ordinal`, workflowID)
	if err != nil {
		return Workflow{}, err
	}
	w, err := scanWorkflow(s.prepared.QueryRowContext(ctx,
		`SELECT `+workflowColumns+` FROM workflows w WHERE w.project_id = $1 AND w.id = $2`, projectID, workflowID))
	if err != nil {
		return Workflow{}, notFound(err, "workflow")
	}
	w.Layers = layers
	account, err := s.projectAccount(ctx, s.prepared, projectID)
	if err != nil {
		return Workflow{}, err
	}
	// The frozen identity stays as dispatched; the installation and the
	// revocation state are the source's current ones, read within the
	// workflow's own project and account.
	for i := range w.Layers {
		l := &w.Layers[i]
		cur, err := s.catalogSource(ctx, s.prepared, account, projectID, l.Source.Scope, l.Source.ID, false)
		if err != nil {
			return Workflow{}, fmt.Errorf("workflow %s layer %s: %w", w.ID, l.Layer, err)
		}
		l.Source.InstallationID = cur.InstallationID
		l.Source.RevokedAt, l.Source.RepositoryRevokedAt = cur.RevokedAt, cur.RepositoryRevokedAt
	}
	return w, nil
}

// ListWorkflows implements CatalogStore.
func (s *sqlStore) ListWorkflows(ctx context.Context, projectID string, limit int) ([]Workflow, error) {
	if limit <= 0 {
		limit = 100
	}
	return queryAll(ctx, s.db, "listing workflows", scanWorkflow,
		`SELECT `+workflowColumns+` FROM workflows w WHERE w.project_id = $1
		 ORDER BY w.created_at DESC, w.id DESC LIMIT $2`, projectID, limit)
}
