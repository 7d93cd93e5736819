// Package instructions is the instruction catalog served beside the
// document tools at /mcp/documents
// (docs/architecture.md#instruction-catalog-contract): catalog profiles
// assembled from allowlisted instruction documents, and workflows that freeze
// exactly what a dispatch was given.
//
// A profile's layers come in a fixed order: the account's core and the
// text of the profile's mode (worker, verifier, …), then the profile's role
// responsibilities, methodology, optional role instructions, soul and
// skills. Role instructions are the one optional layer: any other that is
// not configured is left out and reported in catalog.layers_missing, except
// role responsibilities, without which a profile is not dispatched. Each
// layer is one document: an account instruction source under docs/agents/,
// or an instruction-role document source of the caller's own project. Layer metadata (SHA-256, bytes, Unicode code points, est_tokens,
// provenance) always describes the raw text, never the assembly headings.
//
// The authenticated project is the tenant boundary, as for the document
// tools: a profile or workflow of another project is not_found. Nothing is
// cached: each call reads the configuration from the store and the text
// from GitHub, and a workflow stores commits and hashes, never text.
package instructions

import (
	"context"
	"errors"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/upstream/github"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// The OAuth scopes of the catalog tools, defined here and nowhere else:
// every scope list of the gateway is derived from the tools' policies.
// Reading profiles and workflows needs catalog:read; dispatching, which
// stores a workflow, needs workflow:dispatch and spends the write budget.
var (
	ReadScope = middleware.Scope{Name: "catalog:read",
		Allows: "read the project's instruction profiles and its dispatched workflows"}
	DispatchScope = middleware.Scope{Name: "workflow:dispatch",
		Allows: "dispatch a profile, storing it as a frozen workflow of the project"}
)

// Store is what the catalog reads and writes.
type Store interface {
	ListProfiles(ctx context.Context, accountID, projectID string) ([]store.CatalogProfile, error)
	CatalogPlan(ctx context.Context, projectID, profileID string) (store.CatalogPlan, error)
	CreateWorkflow(ctx context.Context, w store.NewWorkflow) (store.Workflow, error)
	GetWorkflow(ctx context.Context, projectID, workflowID string) (store.Workflow, error)
}

// GitHub reads files at commits and resolves branch heads (github.Client).
type GitHub interface {
	GetFile(ctx context.Context, r github.FileRequest) (*github.File, error)
	BranchHead(ctx context.Context, r github.BranchRequest) (string, error)
}

// Options are the catalog's dependencies.
type Options struct {
	Store  Store
	GitHub GitHub
}

// Every catalog tool acts within the caller's project (toolset.ProjectConsent)
// for an OAuth consent holding its scope; the toolset admits only such callers.
// A dispatch stores a workflow, so besides the write budget it spends the
// per-principal dispatch budget (catalog.dispatches_per_hour), refused
// before anything is read or stored.
var (
	readPolicy     = middleware.ToolPolicy{Scopes: []middleware.Scope{ReadScope}}
	dispatchPolicy = middleware.ToolPolicy{Scopes: []middleware.Scope{DispatchScope}, Write: true, Dispatch: true}
)

type listArgs struct{}

type profileArgs struct {
	ProfileID string `json:"profile_id" arg:"required" pattern:"^prf_[a-z0-9]{1,64}$" desc:"A profile_id from catalog_profiles_list."`
}

type workflowArgs struct {
	WorkflowID string `json:"workflow_id" arg:"required" pattern:"^wfl_[a-z0-9]{1,64}$" desc:"The workflow_id workflow_dispatch returned."`
	Replay     *bool  `json:"replay" desc:"Re-read every layer at its frozen commit, verify its SHA-256 and return the text; default false (metadata only)."`
}

// Tools returns the four catalog tools.
func Tools(o Options) []toolset.Tool {
	return []toolset.Tool{
		toolset.Typed(toolset.Tool{
			Name: "catalog_profiles_list", Title: "List catalog profiles",
			Description: "List the instruction profiles the authenticated project can dispatch: each profile's mode and " +
				"the configured source of every layer in assembly order (core, mode, role responsibilities, methodology, " +
				"role instructions, soul, skills), and catalog.layers_missing: the layers not configured other than the optional " +
				"role instructions. Reads no document.",
			Policy: readPolicy, Needs: toolset.ProjectConsent, ReadOnly: true, Idempotent: true,
		}, func(ctx context.Context, _ listArgs) (any, error) { return o.list(ctx) }),
		toolset.Typed(toolset.Tool{
			Name: "catalog_profile_get", Title: "Assemble a catalog profile",
			Description: "Assemble one profile as a dispatch would, without storing it: every layer is read now (tracking " +
				"branches resolved to their head) and described by SHA-256, bytes, characters, est_tokens and provenance. " +
				"No text is returned; fails like workflow_dispatch would (unreadable source, revoked source, over the 60 KiB budget).",
			Policy: readPolicy, Needs: toolset.ProjectConsent, ReadOnly: true, Idempotent: true, OpenWorld: true,
		}, o.profile),
		toolset.Typed(toolset.Tool{
			Name: "workflow_dispatch", Title: "Dispatch a workflow from a profile",
			Description: "Assemble a profile and store the result as a frozen workflow: the resolved commit, SHA-256 and size " +
				"of every layer, so a replay reads the same bytes. Returns the workflow with each layer's text and the assembled " +
				"instructions. A layer not configured (core, mode, methodology, soul, skills) is left out and reported in " +
				"catalog.layers_missing; any configured source that cannot be read fails the dispatch.",
			Policy: dispatchPolicy, Needs: toolset.ProjectConsent, OpenWorld: true,
		}, o.dispatch),
		toolset.Typed(toolset.Tool{
			Name: "workflow_get", Title: "Get a dispatched workflow",
			Description: "The compact view of a workflow of the authenticated project: profile, mode, layer metadata and " +
				"catalog.layers_missing, no text. With replay: true every layer is re-read at its frozen commit, verified " +
				"against its SHA-256, and returned with the assembled instructions.",
			Policy: readPolicy, Needs: toolset.ProjectConsent, ReadOnly: true, Idempotent: true, OpenWorld: true,
		}, o.workflow),
	}
}

// planFor reads the plan of a profile the caller's project can use.
func (o Options) planFor(ctx context.Context, projectID, profileID string) (store.CatalogPlan, error) {
	plan, err := o.Store.CatalogPlan(ctx, projectID, profileID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return plan, toolerr.New(toolerr.NotFound, "no profile with this ID for the caller's project").With("argument", "profile_id")
	case err != nil:
		return plan, toolerr.Wrap(err, toolerr.Internal, "the catalog could not be read")
	}
	return plan, nil
}

func (o Options) list(ctx context.Context) (any, error) {
	p := middleware.PrincipalFromContext(ctx)
	profiles, err := o.Store.ListProfiles(ctx, "", p.ProjectID)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.Internal, "the catalog could not be read")
	}
	out := ProfileList{ProjectID: p.ProjectID, Profiles: []ProfileSummary{}}
	for _, pr := range profiles {
		plan, err := o.planFor(ctx, p.ProjectID, pr.ID)
		if err != nil {
			return nil, err
		}
		s := ProfileSummary{Profile: profileRef(plan.Profile), Layers: []ConfiguredLayer{}, Catalog: Summary{LayersMissing: missing(plan.Missing), BudgetBytes: BudgetBytes}}
		for _, l := range plan.Layers {
			s.Layers = append(s.Layers, configured(l))
		}
		out.Profiles = append(out.Profiles, s)
	}
	return out, nil
}

// assembleFor plans the profile within the caller's project and assembles
// it: the common start of reading a profile and of dispatching one.
func (o Options) assembleFor(ctx context.Context, profileID string) (*middleware.Principal, store.CatalogPlan, *Assembled, error) {
	p := middleware.PrincipalFromContext(ctx)
	plan, err := o.planFor(ctx, p.ProjectID, profileID)
	if err != nil {
		return nil, store.CatalogPlan{}, nil, err
	}
	a, err := o.assemble(ctx, plan)
	if err != nil {
		return nil, store.CatalogPlan{}, nil, err
	}
	return p, plan, a, nil
}

func (o Options) profile(ctx context.Context, in profileArgs) (any, error) {
	p, plan, a, err := o.assembleFor(ctx, in.ProfileID)
	if err != nil {
		return nil, err
	}
	return AssembledProfile{
		ProjectID: p.ProjectID, Profile: profileRef(plan.Profile),
		Catalog: summary(plan.Missing, a.Layers), Layers: layerViews(a.Layers, nil),
	}, nil
}

func (o Options) dispatch(ctx context.Context, in profileArgs) (any, error) {
	p, plan, a, err := o.assembleFor(ctx, in.ProfileID)
	if err != nil {
		return nil, err
	}
	// The store reads the plan again in the transaction that stores the
	// workflow: what was revoked or reconfigured during assembly refuses.
	w, err := o.Store.CreateWorkflow(ctx, store.NewWorkflow{Plan: plan, Layers: a.Layers, ConsentID: p.ConsentID, Subject: p.Subject})
	var ce *store.CatalogCheckError
	switch {
	case errors.As(err, &ce) && errors.Is(err, store.ErrRevoked):
		return nil, toolerr.New(toolerr.SourceRevoked, "the %s source (or its repository link) was revoked during dispatch; nothing was stored", ce.Layer).
			With("layer", ce.Layer).With("source_id", ce.SourceID)
	case errors.Is(err, store.ErrCatalogChanged):
		return nil, toolerr.New(toolerr.CatalogChanged, "the profile or the account's core/mode configuration changed during dispatch; nothing was stored, dispatch again")
	case errors.Is(err, store.ErrNotFound):
		return nil, toolerr.New(toolerr.NotFound, "no profile with this ID for the caller's project").With("argument", "profile_id")
	case err != nil:
		return nil, toolerr.Wrap(err, toolerr.Internal, "the workflow could not be stored")
	}
	return fullView(w, a.Texts, false), nil
}

func (o Options) workflow(ctx context.Context, in workflowArgs) (any, error) {
	p := middleware.PrincipalFromContext(ctx)
	w, err := o.Store.GetWorkflow(ctx, p.ProjectID, in.WorkflowID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, toolerr.New(toolerr.NotFound, "no workflow with this ID in the caller's project").With("argument", "workflow_id")
	case err != nil:
		return nil, toolerr.Wrap(err, toolerr.Internal, "the workflow could not be read")
	}
	if in.Replay == nil || !*in.Replay {
		return compactView(w), nil
	}
	texts, err := o.replay(ctx, w)
	if err != nil {
		return nil, err
	}
	return fullView(w, texts, true), nil
}

// ProfileList is the result of catalog_profiles_list.
type ProfileList struct {
	ProjectID string           `json:"project_id"`
	Profiles  []ProfileSummary `json:"profiles"`
}

// ProfileRef identifies a profile.
type ProfileRef struct {
	ProfileID string `json:"profile_id"`
	Name      string `json:"name"`
	// Scope is "project" for a profile of the caller's project, "account"
	// for one shared by every project of the account.
	Scope string `json:"scope"`
	Mode  string `json:"mode"`
}

// ProfileSummary is one profile's configuration.
type ProfileSummary struct {
	Profile ProfileRef        `json:"profile"`
	Catalog Summary           `json:"catalog"`
	Layers  []ConfiguredLayer `json:"layers"`
}

// Summary is the catalog member of every result: which layers are not
// configured (LayersMissing, in assembly order), and (once read) the
// budgeted size.
type Summary struct {
	LayersMissing []string `json:"layers_missing"`
	SourceBytes   *int     `json:"source_bytes,omitempty"`
	BudgetBytes   int      `json:"budget_bytes"`
	Chars         *int     `json:"chars,omitempty"`
	// EstTokens is ceil(Chars/4), the estimate of the whole text; it can
	// be less than the sum of the layers' est_tokens, which each round up.
	EstTokens *int `json:"est_tokens,omitempty"`
}

// Repository is a source's repository identity.
type Repository struct {
	Owner string `json:"owner"`
	Name  string `json:"name"`
}

// LayerSource is where a layer comes from: the members every layer view
// opens with, in this order.
type LayerSource struct {
	Layer       string     `json:"layer"`
	Position    int        `json:"position"`
	SourceID    string     `json:"source_id"`
	SourceScope string     `json:"source_scope"`
	Repository  Repository `json:"repository"`
	Path        string     `json:"path"`
	// Provenance is commit:<sha> for a pinned source, tracking:<branch>
	// for a tracking one.
	Provenance string `json:"provenance"`
}

// layerSource describes one planned or frozen layer's source.
func layerSource(layer string, position int, src store.CatalogSource) LayerSource {
	return LayerSource{
		Layer: layer, Position: position, SourceID: src.ID, SourceScope: src.Scope,
		Repository: Repository{Owner: src.Owner, Name: src.Name}, Path: src.Path,
		Provenance: provenance(src),
	}
}

// ConfiguredLayer is a layer as configured, before anything is read.
type ConfiguredLayer struct {
	LayerSource
	// Active is false when the source or its repository link is revoked:
	// dispatch then fails with source_revoked.
	Active bool `json:"active"`
}

// Layer is one assembled or frozen layer. Text is present only in full
// views (dispatch, replay).
type Layer struct {
	LayerSource
	// CommitSHA is the commit read (the branch head it resolved to, for a
	// tracking source).
	CommitSHA string  `json:"commit_sha"`
	SHA256    string  `json:"sha256"`
	Bytes     int     `json:"bytes"`
	Chars     int     `json:"chars"`
	EstTokens int     `json:"est_tokens"`
	Text      *string `json:"text,omitempty"`
}

// AssembledProfile is the result of catalog_profile_get.
type AssembledProfile struct {
	ProjectID string     `json:"project_id"`
	Profile   ProfileRef `json:"profile"`
	Catalog   Summary    `json:"catalog"`
	Layers    []Layer    `json:"layers"`
}

// Workflow is the result of workflow_dispatch and workflow_get.
type Workflow struct {
	WorkflowID   string       `json:"workflow_id"`
	ProjectID    string       `json:"project_id"`
	Profile      WorkflowRef  `json:"profile"`
	Mode         string       `json:"mode"`
	CreatedAt    time.Time    `json:"created_at"`
	DispatchedBy DispatchedBy `json:"dispatched_by"`
	Catalog      Summary      `json:"catalog"`
	Layers       []Layer      `json:"layers"`
	// Instructions is the assembled text (see Instructions); full views only.
	Instructions *string `json:"instructions,omitempty"`
	// Replayed is true when workflow_get re-read and verified every layer.
	Replayed bool `json:"replayed,omitempty"`
}

// WorkflowRef names the profile a workflow was dispatched from.
type WorkflowRef struct {
	ProfileID string `json:"profile_id"`
	Name      string `json:"name"`
}

// DispatchedBy is the principal that dispatched a workflow.
type DispatchedBy struct {
	ConsentID string `json:"grant_id"`
	Subject   string `json:"subject"`
}

func profileRef(p store.CatalogProfile) ProfileRef {
	scope := store.ScopeProject
	if p.ProjectID == "" {
		scope = store.ScopeAccount
	}
	return ProfileRef{ProfileID: p.ID, Name: p.Name, Scope: scope, Mode: p.Mode}
}

func missing(m []string) []string {
	if m == nil {
		return []string{}
	}
	return m
}

func provenance(s store.CatalogSource) string {
	if s.Pinned() {
		return "commit:" + s.CommitSHA
	}
	return "tracking:" + s.TrackingRef
}

func configured(l store.PlanLayer) ConfiguredLayer {
	return ConfiguredLayer{LayerSource: layerSource(l.Layer, l.Position, l.Source), Active: l.Source.Active()}
}

// summary totals the layers. The profile's est_tokens is the estimate of
// its whole text, ceil(total chars / 4), not the sum of the layers' own
// estimates: each of those rounds up, so their sum overcounts by up to one
// token per layer (279 characters in two layers would be 71, not 70).
func summary(m []string, layers []store.FrozenLayer) Summary {
	bytes, chars := 0, 0
	for _, l := range layers {
		bytes += l.Bytes
		chars += l.Chars
	}
	tokens := EstTokens(chars)
	return Summary{LayersMissing: missing(m), SourceBytes: &bytes, BudgetBytes: BudgetBytes, Chars: &chars, EstTokens: &tokens}
}

func layerViews(layers []store.FrozenLayer, texts []string) []Layer {
	out := make([]Layer, 0, len(layers))
	for i, l := range layers {
		v := Layer{
			LayerSource: layerSource(l.Layer, l.Position, l.Source), CommitSHA: l.CommitSHA,
			SHA256: l.SHA256, Bytes: l.Bytes, Chars: l.Chars, EstTokens: EstTokens(l.Chars),
		}
		if texts != nil {
			v.Text = &texts[i]
		}
		out = append(out, v)
	}
	return out
}

// compactView is a workflow's layer metadata without any text.
func compactView(w store.Workflow) Workflow {
	return Workflow{
		WorkflowID: w.ID, ProjectID: w.ProjectID, Profile: WorkflowRef{ProfileID: w.ProfileID, Name: w.ProfileName},
		Mode: w.Mode, CreatedAt: w.CreatedAt, DispatchedBy: DispatchedBy{ConsentID: w.ConsentID, Subject: w.Subject},
		Catalog: summary(w.LayersMissing, w.Layers), Layers: layerViews(w.Layers, nil),
	}
}

// fullView adds each layer's text and the assembled instructions.
func fullView(w store.Workflow, texts []string, replayed bool) Workflow {
	v := compactView(w)
	v.Layers = layerViews(w.Layers, texts)
	s := Instructions(w.Mode, w.Layers, texts)
	v.Instructions, v.Replayed = &s, replayed
	return v
}
