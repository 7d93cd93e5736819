package admin

import (
	"context"
	"flag"

	"github.com/agent-gateway/agent-gateway/store"
)

// Admin commands for accounts, projects, members and linked GitHub
// repositories: the tenant boundary and what it may read from.

func adminCreateAccount(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	name := fs.String("name", "", "account name (unique)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"name": name}); err != nil {
			return err
		}
		acc, err := a.st.CreateAccount(ctx, *name)
		if err != nil {
			return err
		}
		return a.print(field{"account_id", acc.ID}, field{"name", acc.Name}, field{"created_at", acc.CreatedAt})
	}
}

func projectFields(p store.Project) []field {
	return []field{{"project_id", p.ID}, {"account_id", p.AccountID}, {"name", p.Name}, {"created_at", p.CreatedAt}}
}

func adminCreateProject(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	name := fs.String("name", "", "project name (unique within the account)")
	account := fs.String("account", "", "account ID (default: the default account)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"name": name}); err != nil {
			return err
		}
		p, err := a.st.CreateProject(ctx, *account, *name)
		if err != nil {
			return err
		}
		return a.print(projectFields(p)...)
	}
}

func adminListProjects(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	account := fs.String("account", "", "only this account's projects")
	return func(ctx context.Context, a *adminRun) error {
		ps, err := a.st.ListProjects(ctx, *account)
		if err != nil {
			return err
		}
		return a.printList(records(ps, projectFields))
	}
}

func adminAddMember(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	subject := fs.String("subject", "", "OIDC subject (the identity provider's sub claim)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "subject": subject}); err != nil {
			return err
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		if err := a.st.AddMember(ctx, *project, *subject); err != nil {
			return err
		}
		return a.print(field{"project_id", *project}, field{"subject", *subject})
	}
}

func repositoryFields(r store.Repository) []field {
	return []field{
		{"repository_id", r.ID}, {"project_id", r.ProjectID}, {"github_owner", r.Owner}, {"github_repository", r.Name},
		{"installation_id", r.InstallationID}, {"created_at", r.CreatedAt}, {"revoked_at", r.RevokedAt},
	}
}

var adminLinkRepository = linkCommand(byProject, store.Store.LinkRepository, repositoryFields)

var adminListRepositories = listCommand(byProject, "repositories", store.Store.ListRepositories, repositoryFields)

var adminRevokeRepository = revokeCommand(byProject, "repository-id", "repository ID (rep_…)", store.Store.RevokeRepository, repositoryFields)
