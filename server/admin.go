package server

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// UsageError is a command line the admin CLI refuses before touching the
// store; Main exits 2 on it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// adminCommand is one `agent-gateway admin` subcommand: it declares its
// flags on fs and returns the action to run once they are parsed.
type adminCommand struct {
	name    string
	summary string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, a *adminRun) error
}

// adminRun is what an action works with: the store and the output.
type adminRun struct {
	st   store.Store
	out  io.Writer
	json bool
}

// adminCommands is the whole admin surface. There is no model-facing write:
// the allowlist, grants and tokens change only here (seed 002).
var adminCommands = []adminCommand{
	{"create-account", "create an account (projects belong to one; the default account is used otherwise)", adminCreateAccount},
	{"create-project", "create a project, the tenant boundary of the documents catalog", adminCreateProject},
	{"list-projects", "list projects", adminListProjects},
	{"add-member", "allow an OIDC subject to hold grants for a project", adminAddMember},
	{"link-repository", "link a GitHub repository to a project through an App installation", adminLinkRepository},
	{"list-repositories", "list a project's linked repositories", adminListRepositories},
	{"revoke-repository", "unlink a repository and revoke its document sources", adminRevokeRepository},
	{"add-document-source", "allowlist one document of a linked repository at a commit (or tracking a branch)", adminAddDocumentSource},
	{"list-document-sources", "list a project's document sources", adminListDocumentSources},
	{"revoke-document-source", "revoke a document source", adminRevokeDocumentSource},
	{"issue-legacy-token", "issue a legacy static project token (memory/task only; prints it once)", adminIssueLegacyToken},
	{"revoke-legacy-token", "revoke a legacy project token", adminRevokeLegacyToken},
	{"create-grant", "create an OAuth grant for a project member and print an access token once", adminCreateGrant},
	{"issue-access-token", "issue another access token under an active grant (prints it once)", adminIssueAccessToken},
	{"list-grants", "list a project's grants", adminListGrants},
	{"revoke-grant", "revoke a grant and every token issued under it", adminRevokeGrant},
}

func adminUsage() string {
	var b strings.Builder
	b.WriteString("usage: agent-gateway admin <command> [flags]\n\ncommands:\n")
	for _, c := range adminCommands {
		fmt.Fprintf(&b, "  %-26s %s\n", c.name, c.summary)
	}
	b.WriteString("\nEvery command also takes --config FILE, --data-dir DIR and --json; the store is the one\n" +
		"the gateway uses (database.url, or SQLite in data_dir). Run \"agent-gateway admin <command> -h\" for its flags.\n")
	return b.String()
}

// runAdmin runs one admin command against the configured store.
func runAdmin(ctx context.Context, args []string, std Stdio) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(std.Out, adminUsage())
		if len(args) == 0 {
			return &UsageError{Msg: "admin: name a command"}
		}
		return nil
	}
	var cmd *adminCommand
	for i := range adminCommands {
		if adminCommands[i].name == args[0] {
			cmd = &adminCommands[i]
		}
	}
	if cmd == nil {
		return &UsageError{Msg: fmt.Sprintf("admin: unknown command %q\n\n%s", args[0], adminUsage())}
	}
	fs := flag.NewFlagSet("agent-gateway admin "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(std.Err)
	configFile := fs.String("config", "", "YAML configuration file (for database.url and data_dir)")
	dataDir := fs.String("data-dir", "", "data directory (data_dir)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	action := cmd.setup(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{Msg: "admin " + cmd.name + ": " + err.Error()}
	}
	if fs.NArg() > 0 {
		return &UsageError{Msg: fmt.Sprintf("admin %s: unexpected argument %q", cmd.name, fs.Arg(0))}
	}
	var loadArgs []string
	if *configFile != "" {
		loadArgs = append(loadArgs, "--config", *configFile)
	}
	if *dataDir != "" {
		loadArgs = append(loadArgs, "--data-dir", *dataDir)
	}
	loaded, err := Load(LoadOptions{Args: loadArgs, Stderr: std.Err})
	if err != nil {
		return err
	}
	st, err := openStore(ctx, loaded.Config)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := action(ctx, &adminRun{st: st, out: std.Out, json: *asJSON}); err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return &UsageError{Msg: "admin " + cmd.name + ": " + ue.Msg}
		}
		return fmt.Errorf("admin %s: %w", cmd.name, err)
	}
	return nil
}

// required refuses empty required flags, naming them all at once.
func required(flags map[string]*string) error {
	var missing []string
	for name, v := range flags {
		if *v == "" {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &UsageError{Msg: "missing " + strings.Join(missing, ", ")}
	}
	return nil
}

// field is one printed member: its JSON key and value.
type field struct {
	key   string
	value any
}

// print writes one record: "key  value" lines for people, or one JSON
// object with --json.
func (a *adminRun) print(fields ...field) error {
	if a.json {
		obj := make(map[string]any, len(fields))
		for _, f := range fields {
			obj[f.key] = f.value
		}
		return json.NewEncoder(a.out).Encode(obj)
	}
	tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s\t%s\n", f.key, human(f.value))
	}
	return tw.Flush()
}

// printList writes records: a JSON array with --json, else blocks
// separated by blank lines.
func (a *adminRun) printList(records [][]field) error {
	if a.json {
		arr := make([]map[string]any, 0, len(records))
		for _, fields := range records {
			obj := make(map[string]any, len(fields))
			for _, f := range fields {
				obj[f.key] = f.value
			}
			arr = append(arr, obj)
		}
		return json.NewEncoder(a.out).Encode(arr)
	}
	if len(records) == 0 {
		_, err := fmt.Fprintln(a.out, "(none)")
		return err
	}
	for i, fields := range records {
		if i > 0 {
			fmt.Fprintln(a.out)
		}
		if err := a.print(fields...); err != nil {
			return err
		}
	}
	return nil
}

func human(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case *string:
		if v == nil {
			return "-"
		}
		return *v
	case *time.Time:
		if v == nil {
			return "-"
		}
		return v.UTC().Format(time.RFC3339)
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case []string:
		return strings.Join(v, " ")
	}
	return fmt.Sprint(v)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// project checks that a project exists, so every command names a missing
// one the same way.
func (a *adminRun) project(ctx context.Context, id string) (store.Project, error) {
	p, err := a.st.GetProject(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, fmt.Errorf("project %q does not exist (create it with admin create-project)", id)
	}
	return p, err
}

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
		var recs [][]field
		for _, p := range ps {
			recs = append(recs, projectFields(p))
		}
		return a.printList(recs)
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

func adminLinkRepository(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	owner := fs.String("github-owner", "", "GitHub owner (user or organization)")
	repo := fs.String("github-repository", "", "GitHub repository name")
	installation := fs.Int64("installation-id", 0, "GitHub App installation ID that can read the repository")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "github-owner": owner, "github-repository": repo}); err != nil {
			return err
		}
		if *installation <= 0 {
			return &UsageError{Msg: "--installation-id must be a positive integer"}
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		r, err := a.st.LinkRepository(ctx, *project, *owner, *repo, *installation)
		if err != nil {
			return err
		}
		return a.print(repositoryFields(r)...)
	}
}

func adminListRepositories(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	all := fs.Bool("include-revoked", false, "include revoked repositories")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project}); err != nil {
			return err
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		rs, err := a.st.ListRepositories(ctx, *project, *all)
		if err != nil {
			return err
		}
		var recs [][]field
		for _, r := range rs {
			recs = append(recs, repositoryFields(r))
		}
		return a.printList(recs)
	}
}

func adminRevokeRepository(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	id := fs.String("repository-id", "", "repository ID (rep_…)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "repository-id": id}); err != nil {
			return err
		}
		r, err := a.st.RevokeRepository(ctx, *project, *id)
		if err != nil {
			return err
		}
		return a.print(repositoryFields(r)...)
	}
}

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

// adminAddDocumentSource takes the flags of seed 002's
// `heyaira-admin add-document-source`, plus --track and --fragment-limit.
func adminAddDocumentSource(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	owner := fs.String("github-owner", "", "GitHub owner of a linked repository")
	repo := fs.String("github-repository", "", "GitHub repository name of a linked repository")
	role := fs.String("document-role", "", "document role, e.g. runtime or instruction")
	path := fs.String("path", "", "repository path of the document, e.g. docs/CONTINUITY_PROTOCOL.md")
	commit := fs.String("commit-sha", "", "the full 40-character commit SHA to pin")
	track := fs.String("track", "", "a branch to track instead of a commit (resolved at workflow dispatch)")
	limit := fs.Int("fragment-limit", store.MaxFragmentLimit, "largest fragment in bytes (1 to 65536)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "github-owner": owner, "github-repository": repo, "document-role": role, "path": path}); err != nil {
			return err
		}
		sha := strings.ToLower(*commit)
		switch {
		case sha != "" && *track != "":
			return &UsageError{Msg: "give --commit-sha or --track, not both"}
		case sha == "" && *track == "":
			return &UsageError{Msg: "give --commit-sha <40-character SHA> (or --track <branch>)"}
		case sha != "":
			if err := store.ValidateCommitSHA(sha); err != nil {
				return err
			}
		default:
			if err := store.ValidateBranch(*track); err != nil {
				return err
			}
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
			CommitSHA: sha, TrackingRef: *track, FragmentLimit: *limit,
		})
		if err != nil {
			return err
		}
		return a.print(sourceFields(s)...)
	}
}

func adminListDocumentSources(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	all := fs.Bool("include-revoked", false, "include revoked sources")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project}); err != nil {
			return err
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		ss, err := a.st.ListDocumentSources(ctx, *project, *all)
		if err != nil {
			return err
		}
		var recs [][]field
		for _, s := range ss {
			recs = append(recs, sourceFields(s))
		}
		return a.printList(recs)
	}
}

func adminRevokeDocumentSource(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	id := fs.String("source-id", "", "source ID (src_…)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "source-id": id}); err != nil {
			return err
		}
		s, err := a.st.RevokeDocumentSource(ctx, *project, *id)
		if err != nil {
			return err
		}
		return a.print(sourceFields(s)...)
	}
}

func adminIssueLegacyToken(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	perms := fs.String("permissions", "", "comma-separated: memory, task")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "permissions": perms}); err != nil {
			return err
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		t, err := a.st.IssueLegacyToken(ctx, *project, splitList(*perms))
		if err != nil {
			return err
		}
		return a.print(field{"token_id", t.ID}, field{"project_id", t.ProjectID}, field{"permissions", t.Permissions},
			field{"created_at", t.CreatedAt}, field{"token", t.Secret})
	}
}

func adminRevokeLegacyToken(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	id := fs.String("token-id", "", "token ID (ltk_…)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "token-id": id}); err != nil {
			return err
		}
		t, err := a.st.RevokeLegacyToken(ctx, *project, *id)
		if err != nil {
			return err
		}
		return a.print(field{"token_id", t.ID}, field{"project_id", t.ProjectID}, field{"permissions", t.Permissions}, field{"revoked_at", t.RevokedAt})
	}
}

// knownScopes are the scopes the gateway itself checks; others are stored
// (a grant is a consent record) but give no access here.
var knownScopes = map[string]bool{"documents:read": true}

// defaultAdminTokenTTL is the lifetime of an access token the CLI prints:
// short, like every gateway access token; issue-access-token makes more.
const defaultAdminTokenTTL = time.Hour

func grantFields(g store.Grant) []field {
	return []field{
		{"grant_id", g.ID}, {"project_id", g.ProjectID}, {"subject", g.Subject}, {"client_id", g.ClientID},
		{"scopes", g.Scopes}, {"created_at", g.CreatedAt}, {"revoked_at", g.RevokedAt},
	}
}

func adminCreateGrant(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	subject := fs.String("subject", "", "OIDC subject, a member of the project (admin add-member)")
	scopes := fs.String("scopes", "", "comma- or space-separated scopes, e.g. documents:read")
	client := fs.String("client-id", "admin-cli", "client the grant is for")
	ttl := fs.Duration("token-ttl", defaultAdminTokenTTL, "lifetime of the printed access token")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "subject": subject, "scopes": scopes}); err != nil {
			return err
		}
		if *ttl <= 0 {
			return &UsageError{Msg: "--token-ttl must be positive"}
		}
		list := strings.Fields(strings.ReplaceAll(*scopes, ",", " "))
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		if ok, err := a.st.IsMember(ctx, *project, *subject); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("subject %q is not a member of project %q (add it with admin add-member)", *subject, *project)
		}
		g, err := a.st.CreateGrant(ctx, *project, *subject, *client, list)
		if err != nil {
			return err
		}
		tok, err := a.st.IssueAccessToken(ctx, g.ID, *ttl)
		if err != nil {
			return err
		}
		var unknown []string
		for _, s := range g.Scopes {
			if !knownScopes[s] {
				unknown = append(unknown, s)
			}
		}
		fields := append(grantFields(g), field{"access_token", tok.Secret}, field{"expires_at", tok.ExpiresAt})
		if len(unknown) > 0 {
			fields = append(fields, field{"note", "scopes not checked by this gateway: " + strings.Join(unknown, " ")})
		}
		return a.print(fields...)
	}
}

func adminIssueAccessToken(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	grant := fs.String("grant-id", "", "grant ID (grt_…)")
	ttl := fs.Duration("token-ttl", defaultAdminTokenTTL, "lifetime of the access token")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"grant-id": grant}); err != nil {
			return err
		}
		if *ttl <= 0 {
			return &UsageError{Msg: "--token-ttl must be positive"}
		}
		tok, err := a.st.IssueAccessToken(ctx, *grant, *ttl)
		if err != nil {
			return err
		}
		return a.print(field{"grant_id", tok.GrantID}, field{"access_token", tok.Secret}, field{"expires_at", tok.ExpiresAt})
	}
}

func adminListGrants(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	all := fs.Bool("include-revoked", false, "include revoked grants")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project}); err != nil {
			return err
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		gs, err := a.st.ListGrants(ctx, *project, *all)
		if err != nil {
			return err
		}
		var recs [][]field
		for _, g := range gs {
			recs = append(recs, grantFields(g))
		}
		return a.printList(recs)
	}
}

func adminRevokeGrant(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	grant := fs.String("grant-id", "", "grant ID (grt_…)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"grant-id": grant}); err != nil {
			return err
		}
		g, err := a.st.RevokeGrant(ctx, *grant)
		if err != nil {
			return err
		}
		return a.print(grantFields(g)...)
	}
}
