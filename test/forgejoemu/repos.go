package forgejoemu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// accessMode is Forgejo's perm.AccessMode.
type accessMode int

const (
	accessNone accessMode = iota
	accessRead
	accessWrite
	accessAdmin
	accessOwner
)

// RepoOptions configures CreateRepo.
type RepoOptions struct {
	// Private hides the repository from anyone but its owner and collaborators.
	Private bool
	// ObjectFormat is "sha1" (default) or "sha256".
	ObjectFormat string
	// DefaultBranch is the branch HEAD points at; default "main".
	DefaultBranch string
	// Description is shown in the repository object and searched with includeDesc.
	Description string
}

// CreateRepo creates an empty repository with a bare git repository at
// <dir>/<owner>/<name>.git. The owner user is created if absent.
func (e *Emulator) CreateRepo(owner, name string, opts RepoOptions) (*Repo, error) {
	if !validName(owner) || !validName(name) {
		return nil, fmt.Errorf("%w: repository name %q/%q", ErrInvalid, owner, name)
	}
	if opts.ObjectFormat == "" {
		opts.ObjectFormat = "sha1"
	}
	if opts.ObjectFormat != "sha1" && opts.ObjectFormat != "sha256" {
		return nil, fmt.Errorf("%w: object format %q", ErrInvalid, opts.ObjectFormat)
	}
	if opts.DefaultBranch == "" {
		opts.DefaultBranch = "main"
	}

	e.mu.Lock()
	if e.repoLocked(owner, name) != nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: repository %s/%s", ErrExists, owner, name)
	}
	u, err := e.ensureUserLocked(owner)
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	now := e.nowLocked()
	r := &Repo{
		e:             e,
		id:            e.st.nextRepo,
		owner:         u,
		name:          name,
		private:       opts.Private,
		objectFormat:  opts.ObjectFormat,
		defaultBranch: opts.DefaultBranch,
		description:   opts.Description,
		gitDir:        filepath.Join(e.dir, strings.ToLower(u.Login), strings.ToLower(name)+".git"),
		created:       now,
		updated:       now,
		empty:         true,
		nextIndex:     1,
		collaborators: map[int64]accessMode{},
		pulls:         map[int64]*Pull{},
	}
	// Reserve the name while git runs outside the lock.
	e.st.nextRepo++
	e.st.repos[repoKey(owner, name)] = r
	e.mu.Unlock()

	if err := checkBranchName(opts.DefaultBranch); err != nil {
		e.dropRepo(r)
		return nil, err
	}
	// A directory left by an earlier emulator on the same Options.Dir would
	// mix old refs into the new repository.
	if _, err := os.Stat(r.gitDir); err == nil {
		e.mu.Lock()
		delete(e.st.repos, repoKey(owner, name))
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %s exists on disk", ErrExists, r.gitDir)
	}
	if err := e.initBare(r.gitDir, opts.ObjectFormat, opts.DefaultBranch); err != nil {
		e.dropRepo(r)
		return nil, fmt.Errorf("forgejoemu: init %s: %w", r.FullName(), err)
	}
	return r, nil
}

// dropRepo forgets a repository whose creation failed.
func (e *Emulator) dropRepo(r *Repo) {
	e.mu.Lock()
	delete(e.st.repos, repoKey(r.owner.Login, r.name))
	e.mu.Unlock()
	_ = os.RemoveAll(r.gitDir)
}

// AddCollaborator gives a user (created if absent) "read", "write" or
// "admin" access to a repository.
func (e *Emulator) AddCollaborator(owner, repo, login, permission string) error {
	var mode accessMode
	switch permission {
	case "read":
		mode = accessRead
	case "write":
		mode = accessWrite
	case "admin":
		mode = accessAdmin
	default:
		return fmt.Errorf("%w: permission %q", ErrInvalid, permission)
	}
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	u, err := e.ensureUserLocked(login)
	if err != nil {
		return err
	}
	if u == r.owner {
		return fmt.Errorf("%w: %s owns %s", ErrInvalid, login, r.FullName())
	}
	r.collaborators[u.ID] = mode
	return nil
}

// accessLocked is Forgejo's GetUserRepoPermission for the emulator's model:
// the owner owns, collaborators have their mode, anyone (anonymous too) reads
// a public repository, and nobody else sees a private one. Callers hold e.mu.
func (r *Repo) accessLocked(u *User) accessMode {
	if u != nil {
		if u == r.owner {
			return accessOwner
		}
		if m, ok := r.collaborators[u.ID]; ok {
			return m
		}
	}
	if !r.private {
		return accessRead
	}
	return accessNone
}

// isCollaboratorLocked reports whether u collaborates on r. Callers hold e.mu.
func (r *Repo) isCollaboratorLocked(u *User) bool {
	if u == nil {
		return false
	}
	_, ok := r.collaborators[u.ID]
	return ok
}
