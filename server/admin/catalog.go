package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/agent-gateway/agent-gateway/store"
)

// The instruction catalog's admin commands
// (docs/architecture.md#instruction-catalog-contract) live in this file
// and join the admin surface at init, so admin.go does not grow with every
// feature. Like every admin command they validate their input, write only
// through the store, and print what they stored.
func init() {
	adminCommands = append(adminCommands,
		adminCommand{"link-account-repository", "link a GitHub repository to an account for its instruction sources", adminLinkAccountRepository},
		adminCommand{"revoke-account-repository", "unlink an account repository and revoke its instruction sources", adminRevokeAccountRepository},
		adminCommand{"add-instruction-source", "allowlist an account instruction document under docs/agents/ (pinned or --track)", adminAddInstructionSource},
		adminCommand{"list-instruction-sources", "list an account's instruction sources", adminListInstructionSources},
		adminCommand{"revoke-instruction-source", "revoke an account instruction source", adminRevokeInstructionSource},
		adminCommand{"set-account-core", "name the account's core instruction source (or --clear it)", adminSetAccountCore},
		adminCommand{"set-account-mode", "name the account's instruction source for one mode, e.g. worker (or --clear it)", adminSetAccountMode},
		adminCommand{"add-profile", "create a catalog profile of a project (or of the whole account)", adminAddProfile},
		adminCommand{"set-profile-layer", "set the ordered sources of one layer of a profile (or --clear it)", adminSetProfileLayer},
		adminCommand{"list-profiles", "list the catalog profiles of a project or an account, with the layers a dispatch reports missing", adminListProfiles},
		adminCommand{"list-workflows", "list a project's dispatched workflows, newest first", adminListWorkflows},
	)
}

// account checks that an account exists.
func (a *adminRun) account(ctx context.Context, id string) (store.Account, error) {
	acc, err := a.st.GetAccount(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return acc, fmt.Errorf("account %q does not exist (see admin list-projects for account IDs, or admin create-account)", id)
	}
	return acc, err
}

func accountRepositoryFields(r store.AccountRepository) []field {
	return []field{
		{"repository_id", r.ID}, {"account_id", r.AccountID}, {"github_owner", r.Owner}, {"github_repository", r.Name},
		{"installation_id", r.InstallationID}, {"created_at", r.CreatedAt}, {"revoked_at", r.RevokedAt},
	}
}

var adminLinkAccountRepository = linkCommand(byAccount, store.Store.LinkAccountRepository, accountRepositoryFields)

var adminRevokeAccountRepository = revokeCommand(byAccount, "repository-id", "account repository ID (arp_…)", store.Store.RevokeAccountRepository, accountRepositoryFields)

func instructionSourceFields(s store.InstructionSource) []field {
	return []field{
		{"source_id", s.ID}, {"account_id", s.AccountID}, {"repository_id", s.Repository.ID},
		{"github_owner", s.Repository.Owner}, {"github_repository", s.Repository.Name},
		{"document_role", store.RoleInstruction}, {"path", s.Path},
		{"commit_sha", optString(s.CommitSHA)}, {"tracking_ref", optString(s.TrackingRef)},
		{"created_at", s.CreatedAt}, {"revoked_at", s.RevokedAt}, {"active", s.Active()},
	}
}

// adminAddInstructionSource mirrors add-document-source for an account:
// the role is always instruction and the path must be under docs/agents/.
func adminAddInstructionSource(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	account := fs.String("account-id", "", "account ID (acc_…)")
	owner := fs.String("github-owner", "", "GitHub owner of a repository linked to the account")
	repo := fs.String("github-repository", "", "GitHub repository name of a repository linked to the account")
	role := fs.String("document-role", store.RoleInstruction, "document role; only instruction is accepted")
	path := fs.String("path", "", "repository path under docs/agents/, e.g. docs/agents/core.md")
	pin := pinFlags(fs, "resolved at every dispatch")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"account-id": account, "github-owner": owner, "github-repository": repo, "path": path}); err != nil {
			return err
		}
		if *role != store.RoleInstruction {
			return &UsageError{Msg: fmt.Sprintf("--document-role %q: account sources have role %s only", *role, store.RoleInstruction)}
		}
		sha, track, err := pin.resolve()
		if err != nil {
			return err
		}
		if err := store.ValidateInstructionPath(*path); err != nil {
			return err
		}
		if _, err := a.account(ctx, *account); err != nil {
			return err
		}
		r, err := a.st.FindAccountRepository(ctx, *account, *owner, *repo)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("repository %s/%s is not linked to account %s (link it with admin link-account-repository)", *owner, *repo, *account)
		} else if err != nil {
			return err
		}
		s, err := a.st.AddInstructionSource(ctx, store.NewInstructionSource{
			AccountID: *account, RepositoryID: r.ID, Path: *path, CommitSHA: sha, TrackingRef: track,
		})
		if err != nil {
			return err
		}
		return a.print(instructionSourceFields(s)...)
	}
}

var adminListInstructionSources = listCommand(byAccount, "sources", store.Store.ListInstructionSources, instructionSourceFields)

var adminRevokeInstructionSource = revokeCommand(byAccount, "source-id", "instruction source ID (ins_…)", store.Store.RevokeInstructionSource, instructionSourceFields)

// accountLayerFields prints an account's whole core/mode configuration.
func (a *adminRun) accountLayerFields(accountID string, ls []store.AccountLayer) []field {
	core := optString("")
	var modes []string
	modeMap := map[string]any{}
	for _, l := range ls {
		if l.Layer == store.LayerCore {
			core = optString(l.SourceID)
		} else {
			modes = append(modes, l.Mode+"="+l.SourceID)
			modeMap[l.Mode] = l.SourceID
		}
	}
	var modeValue any = modes
	if a.json {
		modeValue = modeMap
	}
	return []field{{"account_id", accountID}, {"core", core}, {"modes", modeValue}}
}

// setAccountLayer is set-account-core and set-account-mode.
func setAccountLayer(fs *flag.FlagSet, layer string) func(context.Context, *adminRun) error {
	account := fs.String("account-id", "", "account ID (acc_…)")
	source := fs.String("source-id", "", "an active instruction source of the account (ins_…)")
	unset := fs.Bool("clear", false, "remove the configuration: dispatch then reports the layer in catalog.layers_missing")
	var mode *string
	if layer == store.LayerMode {
		mode = fs.String("mode", "", "mode name, e.g. worker or verifier")
	}
	return func(ctx context.Context, a *adminRun) error {
		flags := map[string]*string{"account-id": account}
		if mode != nil {
			flags["mode"] = mode
		}
		if err := required(flags); err != nil {
			return err
		}
		if (*source == "") == !*unset {
			return &UsageError{Msg: "give --source-id or --clear"}
		}
		m := ""
		if mode != nil {
			m = *mode
			if err := store.ValidateMode(m); err != nil {
				return err
			}
		}
		if _, err := a.account(ctx, *account); err != nil {
			return err
		}
		ls, err := a.st.SetAccountLayer(ctx, *account, layer, m, *source)
		if errors.Is(err, store.ErrNotFound) && *source != "" {
			return fmt.Errorf("instruction source %q is not a source of account %s (see admin list-instruction-sources)", *source, *account)
		} else if err != nil {
			return err
		}
		return a.print(a.accountLayerFields(*account, ls)...)
	}
}

func adminSetAccountCore(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	return setAccountLayer(fs, store.LayerCore)
}

func adminSetAccountMode(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	return setAccountLayer(fs, store.LayerMode)
}

// profileFields prints a profile and its layers; with the account's
// configuration it also says which layers a dispatch reports missing.
func (a *adminRun) profileFields(p store.CatalogProfile, account []store.AccountLayer) []field {
	var human []string
	var objs []map[string]any
	for _, l := range p.Layers {
		prov := "commit:" + l.Source.CommitSHA
		if !l.Source.Pinned() {
			prov = "tracking:" + l.Source.TrackingRef
		}
		human = append(human, fmt.Sprintf("%s/%d=%s(%s %s)", l.Layer, l.Position, l.Source.ID, l.Source.Path, prov))
		objs = append(objs, map[string]any{
			"layer": l.Layer, "position": l.Position, "source_id": l.Source.ID, "source_scope": l.Source.Scope,
			"github_owner": l.Source.Owner, "github_repository": l.Source.Name, "path": l.Source.Path,
			"provenance": prov, "active": l.Source.Active(),
		})
	}
	var layers any = human
	if a.json {
		layers = objs
	}
	fields := []field{
		{"profile_id", p.ID}, {"account_id", p.AccountID}, {"project_id", optString(p.ProjectID)},
		{"name", p.Name}, {"mode", p.Mode}, {"created_at", p.CreatedAt}, {"layers", layers},
	}
	if account != nil {
		missing := p.MissingLayers(account)
		if missing == nil {
			missing = []string{}
		}
		fields = append(fields, field{"layers_missing", missing})
	}
	return fields
}

func adminAddProfile(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	name := fs.String("name", "", "profile name, e.g. developer (unique in the project, or among the account's account-wide profiles)")
	mode := fs.String("mode", store.DefaultMode, "the mode whose account instruction text precedes the role, e.g. worker or verifier")
	project := fs.String("project-id", "", "the project whose profile this is")
	account := fs.String("account-id", "", "instead of --project-id: an account-wide profile, usable by every project of the account (account sources only)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"name": name}); err != nil {
			return err
		}
		if (*project == "") == (*account == "") {
			return &UsageError{Msg: "give --project-id or --account-id"}
		}
		if err := store.ValidateMode(*mode); err != nil {
			return err
		}
		if *project != "" {
			if _, err := a.project(ctx, *project); err != nil {
				return err
			}
		} else if _, err := a.account(ctx, *account); err != nil {
			return err
		}
		p, err := a.st.CreateProfile(ctx, store.NewCatalogProfile{AccountID: *account, ProjectID: *project, Name: *name, Mode: *mode})
		if err != nil {
			return err
		}
		return a.print(a.profileFields(p, nil)...)
	}
}

func adminSetProfileLayer(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	profile := fs.String("profile-id", "", "profile ID (prf_…)")
	layer := fs.String("layer", "", "one of "+strings.Join(store.ProfileLayers, ", "))
	sources := fs.String("source-id", "", "source ID, or comma-separated IDs in order for role_instructions and skills: "+
		"account instruction sources (ins_…) or, for a project profile, instruction-role document sources of that project (src_…)")
	unset := fs.Bool("clear", false, "remove the layer from the profile: dispatch then reports it in catalog.layers_missing "+
		"(role_instructions, being optional, is never reported; without role_responsibilities dispatch is refused)")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"profile-id": profile, "layer": layer}); err != nil {
			return err
		}
		if err := store.ValidateProfileLayer(*layer); err != nil {
			return err
		}
		ids := commaList(*sources)
		if (len(ids) == 0) == !*unset {
			return &UsageError{Msg: "give --source-id or --clear"}
		}
		if len(ids) > 1 && !store.MultiSourceLayer(*layer) {
			return &UsageError{Msg: fmt.Sprintf("layer %s takes one source", *layer)}
		}
		p, err := a.st.SetProfileLayer(ctx, *profile, *layer, ids)
		if err != nil {
			return err
		}
		return a.print(a.profileFields(p, nil)...)
	}
}

func adminListProfiles(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "the profiles a project can dispatch (its own and its account's account-wide ones)")
	account := fs.String("account-id", "", "instead of --project-id: every profile of the account")
	return func(ctx context.Context, a *adminRun) error {
		if (*project == "") == (*account == "") {
			return &UsageError{Msg: "give --project-id or --account-id"}
		}
		accountID := *account
		if *project != "" {
			p, err := a.project(ctx, *project)
			if err != nil {
				return err
			}
			accountID = p.AccountID
		} else if _, err := a.account(ctx, accountID); err != nil {
			return err
		}
		config, err := a.st.ListAccountLayers(ctx, accountID)
		if err != nil {
			return err
		}
		ps, err := a.st.ListProfiles(ctx, accountID, *project)
		if err != nil {
			return err
		}
		if config == nil {
			config = []store.AccountLayer{}
		}
		var recs [][]field
		for _, p := range ps {
			recs = append(recs, a.profileFields(p, config))
		}
		return a.printList(recs)
	}
}

func adminListWorkflows(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	limit := fs.Int("limit", 50, "at most this many, newest first")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project}); err != nil {
			return err
		}
		if *limit < 1 || *limit > 1000 {
			return &UsageError{Msg: "--limit must be 1 to 1000"}
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		ws, err := a.st.ListWorkflows(ctx, *project, *limit)
		if err != nil {
			return err
		}
		var recs [][]field
		for _, w := range ws {
			recs = append(recs, []field{
				{"workflow_id", w.ID}, {"project_id", w.ProjectID}, {"profile_id", w.ProfileID}, {"profile_name", w.ProfileName},
				{"mode", w.Mode}, {"layers_missing", w.LayersMissing}, {"source_bytes", w.SourceBytes},
				{"grant_id", w.ConsentID}, {"subject", w.Subject}, {"created_at", w.CreatedAt},
			})
		}
		return a.printList(recs)
	}
}
