package admin

import (
	"context"
	"flag"
	"slices"
	"strings"

	"github.com/agent-gateway/agent-gateway/store"
)

// setup is what every command is: it declares its flags and returns the
// action to run once they are parsed.
type setup = func(fs *flag.FlagSet) func(ctx context.Context, a *adminRun) error

// scope is the owner a list or revoke is confined to (a project or an
// account): its flag, and the check that it exists, so every command
// names a missing owner the same way.
type scope struct {
	flag, help string
	exists     func(ctx context.Context, a *adminRun, id string) error
}

var (
	byProject = scope{"project-id", "project ID", func(ctx context.Context, a *adminRun, id string) error {
		_, err := a.project(ctx, id)
		return err
	}}
	byAccount = scope{"account-id", "account ID (acc_…)", func(ctx context.Context, a *adminRun, id string) error {
		_, err := a.account(ctx, id)
		return err
	}}
)

// listCommand is the one shape of list-<things>: the owner's flag,
// --include-revoked, and one record a thing.
func listCommand[T any](sc scope, things string, list func(st store.Store, ctx context.Context, owner string, all bool) ([]T, error), fields func(T) []field) setup {
	return func(fs *flag.FlagSet) func(context.Context, *adminRun) error {
		owner := fs.String(sc.flag, "", sc.help)
		all := fs.Bool("include-revoked", false, "include revoked "+things)
		return func(ctx context.Context, a *adminRun) error {
			if err := required(map[string]*string{sc.flag: owner}); err != nil {
				return err
			}
			if err := sc.exists(ctx, a, *owner); err != nil {
				return err
			}
			items, err := list(a.st, ctx, *owner, *all)
			if err != nil {
				return err
			}
			return a.printList(records(items, fields))
		}
	}
}

// revokeCommand is the one shape of revoke-<thing>: the owner's flag (none
// for a zero scope: the ID alone names the thing), the thing's ID, and the
// revoked thing printed.
func revokeCommand[T any](sc scope, idFlag, idHelp string, revoke func(st store.Store, ctx context.Context, owner, id string) (T, error), fields func(T) []field) setup {
	return func(fs *flag.FlagSet) func(context.Context, *adminRun) error {
		flags := map[string]*string{idFlag: fs.String(idFlag, "", idHelp)}
		owner := new(string)
		if sc.flag != "" {
			owner = fs.String(sc.flag, "", sc.help)
			flags[sc.flag] = owner
		}
		return func(ctx context.Context, a *adminRun) error {
			if err := required(flags); err != nil {
				return err
			}
			v, err := revoke(a.st, ctx, *owner, *flags[idFlag])
			if err != nil {
				return err
			}
			return a.print(fields(v)...)
		}
	}
}

// linkCommand is the one shape of link-repository for either owner: the
// owner's flag, the GitHub owner and repository, the installation that
// reads it (a positive ID), the owner checked to exist, and the link
// printed.
func linkCommand[T any](sc scope, link func(st store.Store, ctx context.Context, owner, githubOwner, name string, installationID int64) (T, error), fields func(T) []field) setup {
	return func(fs *flag.FlagSet) func(context.Context, *adminRun) error {
		owner := fs.String(sc.flag, "", sc.help)
		githubOwner := fs.String("github-owner", "", "GitHub owner (user or organization)")
		repo := fs.String("github-repository", "", "GitHub repository name")
		installation := fs.Int64("installation-id", 0, "GitHub App installation ID that can read the repository")
		return func(ctx context.Context, a *adminRun) error {
			if err := required(map[string]*string{sc.flag: owner, "github-owner": githubOwner, "github-repository": repo}); err != nil {
				return err
			}
			if *installation <= 0 {
				return &UsageError{Msg: "--installation-id must be a positive integer"}
			}
			if err := sc.exists(ctx, a, *owner); err != nil {
				return err
			}
			r, err := link(a.st, ctx, *owner, *githubOwner, *repo, *installation)
			if err != nil {
				return err
			}
			return a.print(fields(r)...)
		}
	}
}

// commaList splits a comma-separated flag value, dropping blank items; no
// items is nil.
func commaList(v string) []string {
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if parts = slices.DeleteFunc(parts, func(p string) bool { return p == "" }); len(parts) == 0 {
		return nil
	}
	return parts
}

// pin is a source's --commit-sha or --track: one of the two, checked.
type pin struct{ commit, track *string }

// pinFlags declares --commit-sha and --track; trackWhen says when a
// tracked branch is resolved.
func pinFlags(fs *flag.FlagSet, trackWhen string) pin {
	return pin{
		commit: fs.String("commit-sha", "", "the full 40-character commit SHA to pin"),
		track:  fs.String("track", "", "a branch to track instead of a commit ("+trackWhen+")"),
	}
}

// resolve returns the lowercased commit or the branch, refusing both,
// neither, or either one malformed.
func (p pin) resolve() (sha, track string, err error) {
	sha, track = strings.ToLower(*p.commit), *p.track
	switch {
	case sha != "" && track != "":
		return "", "", &UsageError{Msg: "give --commit-sha or --track, not both"}
	case sha == "" && track == "":
		return "", "", &UsageError{Msg: "give --commit-sha <40-character SHA> or --track <branch>"}
	case sha != "":
		err = store.ValidateCommitSHA(sha)
	default:
		err = store.ValidateBranch(track)
	}
	return sha, track, err
}
