package instructions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/upstream/github"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// BudgetBytes is the source-text budget of one profile: 60 KiB, counted in
// bytes of the layers' raw UTF-8 text (assembly headings excluded), core
// and mode included. Exactly BudgetBytes passes; one byte more fails.
const BudgetBytes = 60 << 10

// Assembled is a plan read from GitHub: each layer frozen (commit, SHA-256,
// bytes, characters), and its raw text in Texts at the same index.
type Assembled struct {
	Plan   store.CatalogPlan
	Layers []store.FrozenLayer
	Texts  []string
}

// Chars counts Unicode code points (not bytes, not UTF-16 units, not
// grapheme clusters) of valid UTF-8 text: the "character count" of a layer.
func Chars(text []byte) int { return utf8.RuneCount(text) }

// EstTokens is the seed's token estimate, ceil(chars/4).
func EstTokens(chars int) int { return (chars + 3) / 4 }

// layerError adds the layer and source to a refusal, so a caller knows
// which configured source failed the dispatch.
func layerError(err error, l store.PlanLayer) error {
	return toolerr.As(err).With("layer", l.Layer).With("position", l.Position).
		With("source_id", l.Source.ID).With("path", l.Source.Path)
}

// check refuses a plan that cannot be dispatched before anything is read:
// a profile without role responsibilities, a revoked source, or a stored
// source that is not a valid reference.
func check(plan store.CatalogPlan) error {
	responsibilities := false
	for _, l := range plan.Layers {
		responsibilities = responsibilities || l.Layer == store.LayerRoleResponsibilities
		if !l.Source.Active() {
			return layerError(toolerr.New(toolerr.SourceRevoked, "the %s source (or its repository link) has been revoked", l.Layer), l)
		}
		valid := store.ValidateDocumentPath(l.Source.Path) == nil
		if l.Source.Scope == store.ScopeAccount {
			valid = store.ValidateInstructionPath(l.Source.Path) == nil
		}
		if l.Source.Pinned() {
			valid = valid && store.ValidateCommitSHA(l.Source.CommitSHA) == nil
		} else {
			valid = valid && store.ValidateBranch(l.Source.TrackingRef) == nil
		}
		if !valid {
			return layerError(toolerr.New(toolerr.Internal, "the stored %s source is not a valid reference", l.Layer), l)
		}
	}
	if !responsibilities {
		return toolerr.New(toolerr.ProfileIncomplete, "profile %s names no role responsibilities; an administrator sets them with agent-gateway admin set-profile-layer --layer role_responsibilities", plan.Profile.ID).
			With("profile_id", plan.Profile.ID)
	}
	return nil
}

// assemble reads every layer of the plan in assembly order: a tracking
// source's branch is resolved to its head now (once per branch per
// dispatch, so two layers on one branch read one commit), then the file is
// read at that commit. A layer that cannot be read fails the whole
// assembly with its own code; a plan over the budget fails with
// catalog_budget_exceeded naming every layer's size.
func (o Options) assemble(ctx context.Context, plan store.CatalogPlan) (*Assembled, error) {
	if err := check(plan); err != nil {
		return nil, err
	}
	a := &Assembled{Plan: plan}
	heads := map[string]string{}
	total := 0
	for _, l := range plan.Layers {
		src := l.Source
		commit := src.CommitSHA
		if !src.Pinned() {
			key := fmt.Sprintf("%d/%s/%s/%s", src.InstallationID, strings.ToLower(src.Owner), strings.ToLower(src.Name), src.TrackingRef)
			if commit = heads[key]; commit == "" {
				head, err := o.GitHub.BranchHead(ctx, github.BranchRequest{
					InstallationID: src.InstallationID, Owner: src.Owner, Repo: src.Name, Branch: src.TrackingRef,
				})
				if err != nil {
					return nil, layerError(err, l)
				}
				heads[key], commit = head, head
			}
		}
		text, err := o.read(ctx, src, commit)
		if err != nil {
			return nil, layerError(err, l)
		}
		sum := sha256.Sum256(text)
		a.Layers = append(a.Layers, store.FrozenLayer{
			Layer: l.Layer, Position: l.Position, Source: src, CommitSHA: commit,
			SHA256: hex.EncodeToString(sum[:]), Bytes: len(text), Chars: Chars(text),
		})
		// Text is kept only while the budget holds, so an oversized
		// profile costs at most one file of memory beyond the budget.
		total += len(text)
		if total <= BudgetBytes {
			a.Texts = append(a.Texts, string(text))
		}
	}
	if total > BudgetBytes {
		return nil, budgetError(a.Layers, total)
	}
	return a, nil
}

// read fetches one source's file at a commit and requires UTF-8.
func (o Options) read(ctx context.Context, src store.CatalogSource, commit string) ([]byte, error) {
	f, err := o.GitHub.GetFile(ctx, github.FileRequest{
		InstallationID: src.InstallationID, Owner: src.Owner, Repo: src.Name, Path: src.Path, Commit: commit,
	})
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(f.Content) {
		return nil, toolerr.New(toolerr.NotUTF8, "the document is not valid UTF-8; only UTF-8 text can be an instruction layer")
	}
	return f.Content, nil
}

// budgetError names every layer with its size, so the operator sees what
// to trim.
func budgetError(layers []store.FrozenLayer, total int) error {
	names := make([]string, 0, len(layers))
	sizes := make([]map[string]any, 0, len(layers))
	for _, l := range layers {
		names = append(names, fmt.Sprintf("%s %s (%d bytes)", layerTitle(l.Layer, ""), l.Source.Path, l.Bytes))
		sizes = append(sizes, map[string]any{"layer": l.Layer, "position": l.Position, "source_id": l.Source.ID, "path": l.Source.Path, "bytes": l.Bytes})
	}
	return toolerr.New(toolerr.CatalogBudgetExceeded,
		"the profile's source text is %d bytes, over the %d-byte (60 KiB) budget; its layers: %s",
		total, BudgetBytes, strings.Join(names, "; ")).
		With("budget_bytes", BudgetBytes).With("source_bytes", total).With("layers", sizes)
}

// replay re-reads every frozen layer at its frozen commit and proves the
// bytes are the ones dispatched: same SHA-256 and length. A source revoked
// since dispatch is refused rather than read.
func (o Options) replay(ctx context.Context, w store.Workflow) ([]string, error) {
	texts := make([]string, 0, len(w.Layers))
	for _, l := range w.Layers {
		pl := store.PlanLayer{Layer: l.Layer, Position: l.Position, Source: l.Source}
		if !l.Source.Active() {
			return nil, layerError(toolerr.New(toolerr.SourceRevoked, "the %s source (or its repository link) has been revoked since dispatch; the workflow cannot be replayed", l.Layer), pl)
		}
		text, err := o.read(ctx, l.Source, l.CommitSHA)
		if err != nil {
			return nil, layerError(err, pl)
		}
		sum := sha256.Sum256(text)
		if hex.EncodeToString(sum[:]) != l.SHA256 || len(text) != l.Bytes {
			return nil, layerError(toolerr.New(toolerr.ReplayMismatch, "the %s text read at commit %s does not hash to what was dispatched", l.Layer, l.CommitSHA), pl)
		}
		texts = append(texts, string(text))
	}
	return texts, nil
}

// layerTitle is a layer's assembly heading.
func layerTitle(layer, mode string) string {
	switch layer {
	case store.LayerCore:
		return "Core"
	case store.LayerMode:
		if mode == "" {
			return "Mode"
		}
		return "Mode: " + mode
	case store.LayerRoleResponsibilities:
		return "Role responsibilities"
	case store.LayerMethodology:
		return "Methodology"
	case store.LayerRoleInstructions:
		return "Role instructions"
	case store.LayerSoul:
		return "Soul"
	case store.LayerSkills:
		return "Skills"
	}
	return layer
}

// Instructions joins the layers' raw texts in assembly order under
// headings: for each layer "## <title>\n\n", its text, a "\n" if the text
// is non-empty and does not end in one, and a blank line between layers.
// A layer with several sources numbers its headings "(i/n)". The headings
// are not part of any layer's hash, character count or budget.
func Instructions(mode string, layers []store.FrozenLayer, texts []string) string {
	count := map[string]int{}
	for _, l := range layers {
		count[l.Layer]++
	}
	var b strings.Builder
	for i, l := range layers {
		if i > 0 {
			b.WriteString("\n")
		}
		title := layerTitle(l.Layer, mode)
		if count[l.Layer] > 1 {
			title += fmt.Sprintf(" (%d/%d)", l.Position, count[l.Layer])
		}
		b.WriteString("## " + title + "\n\n")
		b.WriteString(texts[i])
		if t := texts[i]; t != "" && !strings.HasSuffix(t, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}
