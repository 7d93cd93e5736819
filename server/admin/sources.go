package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/agent-gateway/agent-gateway/store"
)

// Admin commands that allowlist documents: a project's document sources,
// pinned to a commit or tracking a branch.

func sourceFields(s store.DocumentSource) []field {
	return []field{
		{"source_id", s.ID}, {"project_id", s.ProjectID}, {"repository_id", s.Repository.ID},
		{"github_owner", s.Repository.Owner}, {"github_repository", s.Repository.Name},
		{"document_role", s.Role}, {"path", s.Path},
		{"commit_sha", optString(s.CommitSHA)}, {"tracking_ref", optString(s.TrackingRef)},
		{"fragment_limit", s.FragmentLimit}, {"created_at", s.CreatedAt}, {"revoked_at", s.RevokedAt},
		{"active", s.Active()},
	}
}

// adminAddDocumentSource takes the flags of the documents contract's
// `heyaira-admin add-document-source`, plus --track and --fragment-limit
// (docs/documents.md#3-allowlist-a-document).
func adminAddDocumentSource(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	owner := fs.String("github-owner", "", "GitHub owner of a linked repository")
	repo := fs.String("github-repository", "", "GitHub repository name of a linked repository")
	role := fs.String("document-role", "", "document role, e.g. runtime or instruction")
	path := fs.String("path", "", "repository path of the document, e.g. docs/CONTINUITY_PROTOCOL.md")
	pin := pinFlags(fs, "resolved at workflow dispatch")
	limit := fs.Int("fragment-limit", store.MaxFragmentLimit, "largest fragment in bytes (1 to 65536)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "github-owner": owner, "github-repository": repo, "document-role": role, "path": path}); err != nil {
			return err
		}
		sha, track, err := pin.resolve()
		if err != nil {
			return err
		}
		if err := store.ValidateDocumentPath(*path); err != nil {
			return err
		}
		// Checked before the lookup: a hostile name is refused as such,
		// not echoed back in a "not linked" message.
		if err := store.ValidateGitHubOwner(*owner); err != nil {
			return err
		}
		if err := store.ValidateGitHubRepositoryName(*repo); err != nil {
			return err
		}
		if err := store.ValidateRole(*role); err != nil {
			return err
		}
		if *limit < 1 || *limit > store.MaxFragmentLimit {
			return &UsageError{Msg: fmt.Sprintf("--fragment-limit must be 1 to %d", store.MaxFragmentLimit)}
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		r, err := a.st.FindRepository(ctx, *project, *owner, *repo)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("repository %q is not linked to project %q (link it with admin link-repository)", *owner+"/"+*repo, *project)
		} else if err != nil {
			return err
		}
		s, err := a.st.AddDocumentSource(ctx, store.NewDocumentSource{
			ProjectID: *project, RepositoryID: r.ID, Role: *role, Path: *path,
			CommitSHA: sha, TrackingRef: track, FragmentLimit: *limit,
		})
		if err != nil {
			return err
		}
		return a.print(sourceFields(s)...)
	}
}

var adminListDocumentSources = listCommand(byProject, "sources", store.Store.ListDocumentSources, sourceFields)

var adminRevokeDocumentSource = revokeCommand(byProject, "source-id", "source ID (src_…)", store.Store.RevokeDocumentSource, sourceFields)
