package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// CatalogStore keeps the instruction catalog
// (docs/architecture.md#instruction-catalog-contract): the account's own
// repository links and instruction sources, its core and mode configuration,
// role profiles naming their layers, and the frozen workflows dispatched from
// them. Only the admin CLI writes the configuration; the only model-facing
// write is CreateWorkflow.
type CatalogStore interface {
	// LinkAccountRepository links owner/name to an account for its
	// instruction sources. Owner and name are unique per account among
	// active links, compared case-insensitively (ErrConflict).
	LinkAccountRepository(ctx context.Context, accountID, owner, name string, installationID int64) (AccountRepository, error)
	// FindAccountRepository returns the account's active link of
	// owner/name, matched case-insensitively, or ErrNotFound.
	FindAccountRepository(ctx context.Context, accountID, owner, name string) (AccountRepository, error)
	// RevokeAccountRepository unlinks a repository and revokes its
	// instruction sources in one transaction. Revoking a revoked repository
	// returns it unchanged.
	RevokeAccountRepository(ctx context.Context, accountID, repositoryID string) (AccountRepository, error)

	// AddInstructionSource validates and stores an account instruction
	// source: role instruction, a path under docs/agents/, pinned or
	// tracking. Its repository must be an active link of the same account.
	AddInstructionSource(ctx context.Context, src NewInstructionSource) (InstructionSource, error)
	// ListInstructionSources returns the account's instruction sources
	// ordered by creation, active ones only unless includeRevoked.
	ListInstructionSources(ctx context.Context, accountID string, includeRevoked bool) ([]InstructionSource, error)
	// RevokeInstructionSource revokes one source of the account. Revoking a
	// revoked source returns it unchanged.
	RevokeInstructionSource(ctx context.Context, accountID, sourceID string) (InstructionSource, error)

	// SetAccountLayer names the active instruction source of the account
	// that is its core (layer "core", mode "") or the text of one mode
	// (layer "mode", mode e.g. "worker"). An empty sourceID removes the
	// configuration. It returns the configuration as stored.
	SetAccountLayer(ctx context.Context, accountID, layer, mode, sourceID string) ([]AccountLayer, error)
	// ListAccountLayers returns the account's core and mode configuration.
	ListAccountLayers(ctx context.Context, accountID string) ([]AccountLayer, error)

	// CreateProfile stores a role profile of a project, or of the whole
	// account when ProjectID is empty. Names are unique per project, and
	// among account-wide profiles per account (ErrConflict).
	CreateProfile(ctx context.Context, p NewCatalogProfile) (CatalogProfile, error)
	// SetProfileLayer replaces the ordered sources of one role layer of a
	// profile; no sources removes the layer. Each source is an active
	// instruction source of the profile's account or, for a project
	// profile, an active instruction-role document source of that project;
	// any other ID is ErrNotFound, so another project's source never enters
	// a profile.
	SetProfileLayer(ctx context.Context, profileID, layer string, sourceIDs []string) (CatalogProfile, error)
	// GetProfile returns one profile with its layers, as the admin sees it
	// (no tenant scope).
	GetProfile(ctx context.Context, profileID string) (CatalogProfile, error)
	// ListProfiles returns the profiles a project can use (its own and its
	// account's account-wide ones) when projectID is set, else every profile
	// of the account, ordered by name.
	ListProfiles(ctx context.Context, accountID, projectID string) ([]CatalogProfile, error)

	// CatalogPlan returns what dispatching the profile for the project
	// assembles: core, mode and the profile's layers in assembly order, with
	// each source's current state, and the account layers not configured.
	// A profile the project cannot use is ErrNotFound.
	CatalogPlan(ctx context.Context, projectID, profileID string) (CatalogPlan, error)
	// CreateWorkflow stores a dispatched workflow. In the same transaction
	// it reads the plan again, holding its rows: a source or repository
	// revoked since the plan was read is a *CatalogCheckError wrapping
	// ErrRevoked, a changed configuration one wrapping ErrCatalogChanged,
	// and nothing is stored.
	CreateWorkflow(ctx context.Context, w NewWorkflow) (Workflow, error)
	// GetWorkflow returns one workflow of the project, with each layer's
	// source in its current state, or ErrNotFound (also for another
	// project's workflow).
	GetWorkflow(ctx context.Context, projectID, workflowID string) (Workflow, error)
	// ListWorkflows returns the project's workflows, newest first, at most
	// limit of them.
	ListWorkflows(ctx context.Context, projectID string, limit int) ([]Workflow, error)
}

// Errors of the dispatch re-check (see CatalogCheckError).
var (
	// ErrRevoked means a source or repository of the plan is revoked.
	ErrRevoked = errors.New("revoked")
	// ErrCatalogChanged means the profile's layers or the account's core or
	// mode configuration changed since the plan was read.
	ErrCatalogChanged = errors.New("catalog configuration changed")
)

// CatalogCheckError is why CreateWorkflow refused to store a workflow: Err
// is ErrRevoked or ErrCatalogChanged; Layer and SourceID name the layer
// concerned when one is.
type CatalogCheckError struct {
	Err      error
	Layer    string
	SourceID string
}

func (e *CatalogCheckError) Error() string {
	if e.Layer == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v: layer %s, source %s", e.Err, e.Layer, e.SourceID)
}

// Unwrap returns ErrRevoked or ErrCatalogChanged.
func (e *CatalogCheckError) Unwrap() error { return e.Err }

// The layers of an assembled profile, in assembly order
// (docs/architecture.md#instruction-catalog-contract): the account's core
// and mode, then the profile's role layers.
const (
	LayerCore                 = "core"
	LayerMode                 = "mode"
	LayerRoleResponsibilities = "role_responsibilities"
	LayerMethodology          = "methodology"
	LayerRoleInstructions     = "role_instructions"
	LayerSoul                 = "soul"
	LayerSkills               = "skills"
)

// LayerOrder is the assembly order.
var LayerOrder = []string{
	LayerCore, LayerMode, LayerRoleResponsibilities, LayerMethodology,
	LayerRoleInstructions, LayerSoul, LayerSkills,
}

// ProfileLayers are the layers a profile names itself; core and mode come
// from the account.
var ProfileLayers = LayerOrder[2:]

// reportedLayers are the layers whose absence a dispatch reports in
// catalog.layers_missing, in assembly order. The instruction catalog
// contract (docs/architecture.md#instruction-catalog-contract) makes role
// instructions the one optional layer, so every other one is reported when
// absent — except role responsibilities, without which a profile has no
// role and is refused (profile_incomplete) rather than dispatched.
var reportedLayers = []string{LayerCore, LayerMode, LayerMethodology, LayerSoul, LayerSkills}

// missingLayers lists, in assembly order, the reported layers not in has.
func missingLayers(has map[string]bool) []string {
	var out []string
	for _, l := range reportedLayers {
		if !has[l] {
			out = append(out, l)
		}
	}
	return out
}

// layerSet is the set of layers that ls names.
func layerSet(ls []PlanLayer) map[string]bool {
	has := make(map[string]bool, len(ls))
	for _, l := range ls {
		has[l.Layer] = true
	}
	return has
}

// multiLayers may name several sources (in order); the others one.
var multiLayers = map[string]bool{LayerRoleInstructions: true, LayerSkills: true}

// MaxLayerSources bounds the sources of one multi-source layer.
const MaxLayerSources = 16

// InstructionPathPrefix is where account instruction sources must live.
const InstructionPathPrefix = "docs/agents/"

// Source scopes: where a catalog source is configured.
const (
	ScopeAccount = "account"
	ScopeProject = "project"
)

// DefaultMode is the mode of a profile created without one.
const DefaultMode = "worker"

// AccountRepository is a GitHub repository linked to an account for its
// instruction sources. IDs start with "arp_".
type AccountRepository struct {
	ID             string
	AccountID      string
	Owner          string
	Name           string
	InstallationID int64
	CreatedAt      time.Time
	RevokedAt      *time.Time
}

// NewInstructionSource is the input of AddInstructionSource: exactly one of
// CommitSHA and TrackingRef.
type NewInstructionSource struct {
	AccountID    string
	RepositoryID string
	Path         string
	CommitSHA    string
	TrackingRef  string
}

// InstructionSource is an account-scoped instruction document. IDs start
// with "ins_". Its role is always RoleInstruction.
type InstructionSource struct {
	ID          string
	AccountID   string
	Repository  AccountRepository
	Path        string
	CommitSHA   string
	TrackingRef string
	CreatedAt   time.Time
	RevokedAt   *time.Time
}

// Active reports whether neither the source nor its repository is revoked.
func (s InstructionSource) Active() bool {
	return s.RevokedAt == nil && s.Repository.RevokedAt == nil
}

// AccountLayer is one row of an account's core and mode configuration.
type AccountLayer struct {
	AccountID string
	Layer     string // LayerCore or LayerMode
	Mode      string // "" for the core
	SourceID  string
	UpdatedAt time.Time
}

// NewCatalogProfile is the input of CreateProfile. An empty ProjectID makes
// an account-wide profile; an empty AccountID with a ProjectID means the
// project's account. Mode defaults to DefaultMode.
type NewCatalogProfile struct {
	AccountID string
	ProjectID string
	Name      string
	Mode      string
}

// CatalogProfile is a role profile: a name, the mode whose account text it
// gets, and the sources of its role layers. IDs start with "prf_".
type CatalogProfile struct {
	ID        string
	AccountID string
	// ProjectID is empty for an account-wide profile.
	ProjectID string
	Name      string
	Mode      string
	CreatedAt time.Time
	// Layers are the profile's own layers in assembly order.
	Layers []PlanLayer
}

// MissingLayers is what a dispatch of the profile reports in
// catalog.layers_missing, given the account's core and mode configuration:
// the same rule as CatalogPlan's Missing, for the admin's view of a
// profile.
func (p CatalogProfile) MissingLayers(account []AccountLayer) []string {
	has := layerSet(p.Layers)
	for _, a := range account {
		if a.Layer == LayerCore || (a.Layer == LayerMode && a.Mode == p.Mode) {
			has[a.Layer] = true
		}
	}
	return missingLayers(has)
}

// CatalogSource is a document a catalog layer reads: an account
// instruction source or a project document source, with its repository's
// identity, installation and revocation state.
type CatalogSource struct {
	Scope          string // ScopeAccount or ScopeProject
	ID             string
	RepositoryID   string
	Owner, Name    string
	InstallationID int64
	Path           string
	CommitSHA      string
	TrackingRef    string
	RevokedAt      *time.Time
	// RepositoryRevokedAt is the revocation of the repository link.
	RepositoryRevokedAt *time.Time
}

// Active reports whether neither the source nor its repository is revoked.
func (s CatalogSource) Active() bool { return s.RevokedAt == nil && s.RepositoryRevokedAt == nil }

// Pinned reports whether the source names a commit rather than a branch.
func (s CatalogSource) Pinned() bool { return s.CommitSHA != "" }

// PlanLayer is one source of one layer: Position counts from 1 within the
// layer.
type PlanLayer struct {
	Layer    string
	Position int
	Source   CatalogSource
}

// CatalogPlan is what a dispatch of Profile for ProjectID assembles.
type CatalogPlan struct {
	ProjectID string
	Profile   CatalogProfile
	// Layers are core, mode and the profile's layers, in assembly order.
	Layers []PlanLayer
	// Missing lists, in assembly order, the layers not configured that a
	// dispatch reports in catalog.layers_missing: the account's core and
	// mode, the profile's methodology, soul and skills (reportedLayers).
	Missing []string
}

// fingerprint identifies the plan's configuration (which source serves
// which layer, and what is missing), not its sources' revocation state.
func (p CatalogPlan) fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|", p.Profile.ID, p.Profile.Mode, strings.Join(p.Missing, ","))
	for _, l := range p.Layers {
		fmt.Fprintf(&b, "%s/%d/%s/%s;", l.Layer, l.Position, l.Source.Scope, l.Source.ID)
	}
	return b.String()
}

// FrozenLayer is one layer as a dispatch read it: the source, the commit it
// read (a tracking source's resolved branch head), and the SHA-256, byte
// and character count of the raw text.
type FrozenLayer struct {
	Layer     string
	Position  int
	Source    CatalogSource
	CommitSHA string
	SHA256    string
	Bytes     int
	Chars     int
}

// NewWorkflow is the input of CreateWorkflow: the plan the dispatch read
// and, in the same order, what it read for each of the plan's layers.
type NewWorkflow struct {
	Plan      CatalogPlan
	Layers    []FrozenLayer
	ConsentID string
	Subject   string
}

// Workflow is a dispatched, frozen instruction contract. IDs start with
// "wfl_".
type Workflow struct {
	ID            string
	ProjectID     string
	ProfileID     string
	ProfileName   string
	Mode          string
	LayersMissing []string
	SourceBytes   int
	ConsentID     string
	Subject       string
	CreatedAt     time.Time
	// Layers are the frozen layers in assembly order. Each Source is the
	// source's current state (GetWorkflow), so a replay can refuse a
	// revoked one; CommitSHA, SHA256, Bytes and Chars are as dispatched.
	Layers []FrozenLayer
}

// ValidateMode checks a mode name: a lowercase word like a role.
func ValidateMode(mode string) error {
	if err := ValidateRole(mode); err != nil {
		return invalid("mode", "%s: want a lowercase letter, then letters, digits, '-' or '_' (at most 64 bytes)", quote(mode))
	}
	return nil
}

// ValidateInstructionPath checks an account instruction source path: a
// valid document path under docs/agents/.
func ValidateInstructionPath(path string) error {
	if err := ValidateDocumentPath(path); err != nil {
		return err
	}
	if !strings.HasPrefix(path, InstructionPathPrefix) {
		return invalid("path", "%s: instruction sources must be under %s", quote(path), InstructionPathPrefix)
	}
	return nil
}

// ValidateProfileLayer checks a profile layer name.
func ValidateProfileLayer(layer string) error {
	if !slices.Contains(ProfileLayers, layer) {
		return invalid("layer", "%s: want one of %s", quote(layer), strings.Join(ProfileLayers, ", "))
	}
	return nil
}

// MultiSourceLayer reports whether a profile layer may name several
// sources.
func MultiSourceLayer(layer string) bool { return multiLayers[layer] }
