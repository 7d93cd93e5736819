package forgejoemu

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
)

// Errors returned by the setup API, for errors.Is.
var (
	// ErrNotFound reports an unknown user, repository, branch or pull request.
	ErrNotFound = errors.New("forgejoemu: not found")
	// ErrExists reports a user, repository or branch that already exists.
	ErrExists = errors.New("forgejoemu: already exists")
	// ErrInvalid reports an argument Forgejo would refuse (name, permission, state).
	ErrInvalid = errors.New("forgejoemu: invalid argument")
)

// First values of the ID sequences. They differ so that a client mixing up a
// repository ID, a pull request ID and a user ID is caught by a test rather
// than hidden by equal small numbers.
const (
	firstUserID = 1
	firstRepoID = 42
	firstPullID = 1001
)

// User is a Forgejo account. Bots are ordinary users, as in Forgejo.
type User struct {
	// ID is the user's numeric ID.
	ID int64
	// Login is the user name as created (lookups ignore case, like Forgejo).
	Login string
	// Email is the primary e-mail address shown to signed-in callers.
	Email string

	created time.Time
}

// Repo is a repository of the emulator, backed by a bare git repository.
type Repo struct {
	e             *Emulator
	id            int64
	owner         *User
	name          string
	private       bool
	objectFormat  string
	defaultBranch string
	description   string
	gitDir        string

	// Guarded by e.mu.
	created, updated time.Time
	empty            bool
	nextIndex        int64
	collaborators    map[int64]accessMode
	pulls            map[int64]*Pull

	// gitMu serializes the ref updates made through the emulator, and
	// commitSeq (guarded by it) numbers commits for their fixed dates.
	gitMu     sync.Mutex
	commitSeq int64
}

// GitDir returns the path of the bare git repository on disk.
func (r *Repo) GitDir() string { return r.gitDir }

// ID returns the repository's numeric ID.
func (r *Repo) ID() int64 { return r.id }

// Owner returns the owner's login.
func (r *Repo) Owner() string { return r.owner.Login }

// Name returns the repository name.
func (r *Repo) Name() string { return r.name }

// FullName returns "owner/name".
func (r *Repo) FullName() string { return r.owner.Login + "/" + r.name }

// ObjectFormat returns "sha1" or "sha256".
func (r *Repo) ObjectFormat() string { return r.objectFormat }

// DefaultBranch returns the branch HEAD points at.
func (r *Repo) DefaultBranch() string { return r.defaultBranch }

// Private reports whether the repository is private.
func (r *Repo) Private() bool { return r.private }

// Pull is a pull request of the emulator. Its fields change through the
// emulator's methods; the accessors read them under the emulator's lock.
type Pull struct {
	repo   *Repo
	id     int64
	index  int64
	poster *User
	title  string
	body   string
	head   string
	base   string

	// Guarded by repo.e.mu.
	mergeBase        string
	closed           bool
	merged           bool
	mergedCommit     string
	mergedBy         *User
	created, updated time.Time
	closedAt         time.Time
	mergedAt         time.Time
}

// ID returns the pull request's own numeric ID (not its index).
func (p *Pull) ID() int64 { return p.id }

// Index returns the pull request's number within its repository.
func (p *Pull) Index() int64 { return p.index }

// HeadBranch returns the name of the head branch.
func (p *Pull) HeadBranch() string { return p.head }

// BaseBranch returns the name of the base branch.
func (p *Pull) BaseBranch() string { return p.base }

// HeadRef returns the hidden ref Forgejo keeps for the head: refs/pull/<index>/head.
func (p *Pull) HeadRef() string { return fmt.Sprintf("refs/pull/%d/head", p.index) }

// MergeBase returns the stored merge base, as Forgejo stores it.
func (p *Pull) MergeBase() string {
	p.repo.e.mu.Lock()
	defer p.repo.e.mu.Unlock()
	return p.mergeBase
}

// token is a personal access token.
type token struct {
	user  *User
	scope string // comma-separated, as Forgejo stores it
}

// state is everything the emulator knows, guarded by Emulator.mu. No git
// command runs while the lock is held.
type state struct {
	users      map[string]*User // by lower-case login
	usersByID  map[int64]*User
	repos      map[string]*Repo // by lower-case "owner/name"
	tokens     map[string]*token
	passwords  map[int64]string
	nextUser   int64
	nextRepo   int64
	nextPull   int64
	ticks      int64
	faults     map[string]*faultEntry
	requests   emurecord.Ring[Recorded] // record.go
	stats      map[string]diffStat      // by repository, merge base, head
	mergeBases map[string]string        // by repository, base, head
	grants     *grantState              // agent work grants (grants.go); nil until first use
	diff       diffState                // evidence faults and synthetic diffs, own lock (diff.go)
	stock      bool                     // answer like a forge without Core's extensions (stock.go)
	linkMode   LinkMode                 // which Link the list routes send (pagination.go)
}

func newState() state {
	return state{
		users:      map[string]*User{},
		usersByID:  map[int64]*User{},
		repos:      map[string]*Repo{},
		tokens:     map[string]*token{},
		passwords:  map[int64]string{},
		nextUser:   firstUserID,
		nextRepo:   firstRepoID,
		nextPull:   firstPullID,
		faults:     map[string]*faultEntry{},
		stats:      map[string]diffStat{},
		mergeBases: map[string]string{},
	}
}

// nameRe is the subset of Forgejo's user and repository names the emulator
// accepts: ASCII letters, digits, '-', '_' and '.', not starting with '.' or '-'.
var nameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$`)

func validName(s string) bool {
	return nameRe.MatchString(s) && !strings.HasSuffix(s, ".git")
}

func repoKey(owner, name string) string {
	return strings.ToLower(owner) + "/" + strings.ToLower(name)
}

// epoch is where the default deterministic clock starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// nowLocked returns the current time of the emulator, at Forgejo's one-second
// precision. The default clock is deterministic: every call advances it by one
// second. Callers hold e.mu.
func (e *Emulator) nowLocked() time.Time {
	if e.opts.Now != nil {
		return e.opts.Now().UTC().Truncate(time.Second)
	}
	e.st.ticks++
	return epoch.Add(time.Duration(e.st.ticks) * time.Second)
}

// userLocked finds a user by login, ignoring case. Callers hold e.mu.
func (e *Emulator) userLocked(login string) *User {
	return e.st.users[strings.ToLower(login)]
}

// repoLocked finds a repository by owner and name, ignoring case. Callers hold e.mu.
func (e *Emulator) repoLocked(owner, name string) *Repo {
	return e.st.repos[repoKey(owner, name)]
}

// lookupRepo finds a repository for the setup API.
func (e *Emulator) lookupRepo(owner, name string) (*Repo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.repoLocked(owner, name)
	if r == nil {
		return nil, fmt.Errorf("%w: repository %s/%s", ErrNotFound, owner, name)
	}
	return r, nil
}

// lookupPull finds a pull request for the setup API.
func (e *Emulator) lookupPull(owner, name string, index int64) (*Pull, error) {
	r, err := e.lookupRepo(owner, name)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := r.pulls[index]
	if p == nil {
		return nil, fmt.Errorf("%w: pull request %s#%d", ErrNotFound, r.FullName(), index)
	}
	return p, nil
}
