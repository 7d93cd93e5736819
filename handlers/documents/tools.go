// Package documents is the documents toolset served at /mcp/documents
// (read-only Git document access, docs/architecture.md#documents-contract):
// the project's allowlisted references (runtime_bootstrap_get) and verified,
// UTF-8-safe fragments of one pinned document (git_document_get).
//
// The authenticated project is the tenant boundary: every lookup is scoped
// to the caller's project, and another project's source is not_found,
// indistinguishable from an absent one. Both tools need the OAuth scope
// documents:read, which the scope gate checks before any store or GitHub
// call; the handlers check it again, so a wiring mistake fails closed.
// Nothing is cached: every call, continuation or not, reads the source's
// state from the store and the file from GitHub.
package documents

import (
	"context"
	"errors"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/upstream/github"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// ReadScope is the OAuth scope both tools need; its definition here is
// the one every scope list of the gateway is derived from.
var ReadScope = middleware.Scope{Name: "documents:read", Allows: "read the project's allowlisted GitHub documents"}

// Sources is what the toolset reads from the store.
type Sources interface {
	GetDocumentSource(ctx context.Context, projectID, sourceID string) (store.DocumentSource, error)
	ListDocumentSources(ctx context.Context, projectID string, includeRevoked bool) ([]store.DocumentSource, error)
}

// Files reads one pinned file from GitHub (github.Client).
type Files interface {
	GetFile(ctx context.Context, r github.FileRequest) (*github.File, error)
}

// Options are the toolset's dependencies.
type Options struct {
	Sources Sources
	Files   Files
	Cursors *Cursors
}

// policy: both tools read within the caller's project (toolset.ProjectConsent),
// for an OAuth consent holding ReadScope; the toolset admits only such callers, so
// the tools read the principal without checking it again.
var policy = middleware.ToolPolicy{Scopes: []middleware.Scope{ReadScope}}

type bootstrapArgs struct{}

type getArgs struct {
	SourceID  string  `json:"source_id" arg:"required" pattern:"^src_[a-z0-9]{1,64}$" desc:"A source_id from runtime_bootstrap_get."`
	StartByte *int64  `json:"start_byte" min:"0" desc:"Byte offset to start at (a UTF-8 character boundary); default 0. Not with cursor."`
	MaxBytes  *int64  `json:"max_bytes" min:"1" max:"65536" desc:"Largest fragment to return, in bytes; default and maximum 65536 (and the source's fragment limit)."`
	Cursor    *string `json:"cursor" maxlen:"4096" desc:"next_cursor of the previous fragment, to continue reading."`
}

// Tools returns the two document tools.
func Tools(o Options) []toolset.Tool {
	return []toolset.Tool{
		toolset.Typed(toolset.Tool{
			Name: "runtime_bootstrap_get", Title: "Get runtime document references",
			Description: "List the authenticated project's active allowlisted documents: source_id, repository, role, path, " +
				"pinned commit_sha (null for tracking sources, which need workflow dispatch) and limits. " +
				"Fails with runtime_unconfigured when the project has no active runtime source.",
			Policy: policy, Needs: toolset.ProjectConsent, ReadOnly: true, Idempotent: true,
		}, func(ctx context.Context, _ bootstrapArgs) (any, error) { return o.bootstrap(ctx) }),
		toolset.Typed(toolset.Tool{
			Name: "git_document_get", Title: "Read an allowlisted document",
			Description: "Read a fragment (at most 64 KiB, ending on a UTF-8 character boundary) of one allowlisted document " +
				"at its pinned commit, with the SHA-256 of the whole file and of the fragment. Continue with next_cursor " +
				"until it is absent.",
			Policy: policy, Needs: toolset.ProjectConsent, ReadOnly: true, Idempotent: true, OpenWorld: true, Pages: true,
		}, o.get),
	}
}

// Bootstrap is the result of runtime_bootstrap_get.
type Bootstrap struct {
	ProjectID string      `json:"project_id"`
	Sources   []SourceRef `json:"sources"`
}

// SourceRef is one allowlisted reference.
type SourceRef struct {
	SourceID   string     `json:"source_id"`
	Repository Repository `json:"repository"`
	Role       string     `json:"role"`
	Path       string     `json:"path"`
	// CommitSHA is null for a tracking source.
	CommitSHA *string `json:"commit_sha"`
	// TrackingRef is the branch of a tracking source, absent when pinned.
	TrackingRef string `json:"tracking_ref,omitempty"`
	// RequiresDispatch is true for tracking sources: git_document_get
	// refuses them (source_requires_dispatch).
	RequiresDispatch bool   `json:"requires_dispatch"`
	Limits           Limits `json:"limits"`
}

// Repository is a source's repository identity.
type Repository struct {
	Owner string `json:"owner"`
	Name  string `json:"name"`
}

// Limits are the bounds a read of the source obeys.
type Limits struct {
	FragmentBytes int `json:"fragment_bytes"`
	FileBytes     int `json:"file_bytes"`
}

func (o Options) bootstrap(ctx context.Context) (any, error) {
	p := middleware.PrincipalFromContext(ctx)
	srcs, err := o.Sources.ListDocumentSources(ctx, p.ProjectID, false)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.Internal, "the allowlist could not be read")
	}
	out := Bootstrap{ProjectID: p.ProjectID, Sources: []SourceRef{}}
	runtime := false
	for _, s := range srcs {
		if !s.Active() {
			continue
		}
		runtime = runtime || s.Role == store.RoleRuntime
		ref := SourceRef{
			SourceID: s.ID, Repository: Repository{Owner: s.Repository.Owner, Name: s.Repository.Name},
			Role: s.Role, Path: s.Path, TrackingRef: s.TrackingRef, RequiresDispatch: !s.Pinned(),
			Limits: Limits{FragmentBytes: min(s.FragmentLimit, MaxFragmentBytes), FileBytes: github.MaxFileBytes},
		}
		if s.Pinned() {
			sha := s.CommitSHA
			ref.CommitSHA = &sha
		}
		out.Sources = append(out.Sources, ref)
	}
	if !runtime {
		return nil, toolerr.New(toolerr.RuntimeUnconfigured, "the project has no active runtime document source; an administrator adds one with agent-gateway admin add-document-source --document-role runtime")
	}
	return out, nil
}

func (o Options) get(ctx context.Context, in getArgs) (any, error) {
	p := middleware.PrincipalFromContext(ctx)
	// The cursor is checked before anything is read: a forged, expired or
	// foreign cursor costs no store or GitHub call.
	var start int64
	var claims *CursorClaims
	switch {
	case in.Cursor != nil && in.StartByte != nil:
		return nil, toolerr.New(toolerr.InvalidArguments, "give start_byte or cursor, not both").With("argument", "start_byte")
	case in.Cursor != nil:
		cl, err := o.Cursors.Verify(*in.Cursor)
		if err != nil {
			return nil, err
		}
		if !cl.boundTo(p.ProjectID, p.Key, in.SourceID) {
			return nil, invalid("not for this caller and source")
		}
		claims, start = &cl, cl.Offset
	case in.StartByte != nil:
		start = *in.StartByte
	}

	src, err := o.Sources.GetDocumentSource(ctx, p.ProjectID, in.SourceID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, toolerr.New(toolerr.NotFound, "no document source with this ID in the caller's project").With("argument", "source_id")
	case err != nil:
		return nil, toolerr.Wrap(err, toolerr.Internal, "the allowlist could not be read")
	case !src.Active():
		return nil, toolerr.New(toolerr.SourceRevoked, "the document source has been revoked")
	case !src.Pinned():
		return nil, toolerr.New(toolerr.SourceRequiresDispatch, "the source tracks branch %q and is read only through workflow dispatch; standalone reads need a pinned commit", src.TrackingRef)
	}
	if store.ValidateCommitSHA(src.CommitSHA) != nil || store.ValidateDocumentPath(src.Path) != nil {
		return nil, toolerr.New(toolerr.Internal, "the stored source is not a valid pinned reference")
	}
	if claims != nil && !claims.sameVersion(src.CommitSHA, src.Path) {
		return nil, toolerr.New(toolerr.CursorStale, "the source no longer names the file version the cursor was issued for; start again without a cursor")
	}

	f, err := o.Files.GetFile(ctx, github.FileRequest{
		InstallationID: src.Repository.InstallationID,
		Owner:          src.Repository.Owner, Repo: src.Repository.Name,
		Path: src.Path, Commit: src.CommitSHA,
	})
	if err != nil {
		return nil, err
	}
	// Everything answered below is copied out of the content (the
	// fragment's text, the hashes), so its buffer goes back for reuse
	// when the call returns.
	defer f.Release()
	content := f.Content
	if !validUTF8(content) {
		return nil, toolerr.New(toolerr.NotUTF8, "the document is not valid UTF-8; only UTF-8 text files can be read")
	}
	size := int64(len(content))
	if start > size {
		if claims != nil {
			return nil, toolerr.New(toolerr.CursorStale, "the cursor points past the end of the file; start again without a cursor")
		}
		return nil, toolerr.New(toolerr.InvalidArguments, "start_byte %d is past the end of the %d-byte file", start, size).With("argument", "start_byte")
	}
	limit := min(MaxFragmentBytes, src.FragmentLimit)
	if in.MaxBytes != nil {
		limit = min(limit, int(*in.MaxBytes))
	}
	end, err := fragmentEnd(content, start, limit)
	if err != nil {
		return nil, err
	}
	frag := content[start:end]
	middleware.RecordFromContext(ctx).SetPage(len(frag))
	fileSum, fragSum := fileAndFragmentSHA256(content, start, end)
	out := Fragment{
		Content: string(frag), StartByte: start, EndByte: end, FileBytes: size,
		FileSHA256: fileSum, FragmentSHA256: fragSum,
		CommitSHA: src.CommitSHA, Path: src.Path,
	}
	audit.SetDocument(ctx, audit.DocumentEvidence{
		Commit: out.CommitSHA, Path: out.Path, FileSHA256: out.FileSHA256,
		StartByte: start, EndByte: end, FragmentSHA256: out.FragmentSHA256,
	})
	if end < size {
		out.NextCursor = o.Cursors.Sign(CursorClaims{
			ProjectID: p.ProjectID, Principal: p.Key, SourceID: src.ID,
			Commit: src.CommitSHA, Path: src.Path, Offset: end,
		})
	}
	return out, nil
}
