package forgejoemu

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Grant states (docs/architecture.md#agent-work-grant-contract): a human
// prepares a grant (awaiting_agent), the bot it names confirms the exact
// proposal (awaiting_human), a human approves it (active), and a human may
// withdraw it at any time (revoked).
const (
	GrantAwaitingAgent = "awaiting_agent"
	GrantAwaitingHuman = "awaiting_human"
	GrantActive        = "active"
	GrantRevoked       = "revoked"
)

// Submission outcomes, and the one review state a receipt ever has: a
// receipt is not human acceptance of the result.
const (
	OutcomeSubmitted           = "submitted"
	OutcomeIssueDeleted        = "issue_deleted"
	OutcomeIssueBindingChanged = "issue_binding_changed"
	ReviewAwaitingReview       = "awaiting_review"
)

// The proposal triple's fixed members.
const (
	ProposalSchema  = "agent_work_grant.v1"
	ProposalVersion = 1
)

// First values of the grant and Issue ID sequences, apart from the user,
// repository and pull request sequences (see state.go).
const (
	firstGrantID = 7001
	firstIssueID = 5001
)

// GrantProposal is the human-prepared text of a grant.
type GrantProposal struct {
	// Task says what the bot is asked to do.
	Task string
	// Summary is the short form shown in lists.
	Summary string
}

// Grant is a snapshot of an agent work grant, for tests.
type Grant struct {
	ID            int64
	RepositoryID  int64
	Owner, Repo   string
	Agent         string
	AgentID       int64
	State         string
	StateRevision int64
	// Digest is the proposal digest a bot must repeat (64 lowercase hex).
	Digest        string
	Task, Summary string
	// Submissions counts the request keys committed on the grant.
	Submissions int
}

// Issue is a snapshot of an Issue created by a grant submission.
type Issue struct {
	ID, Index   int64
	Owner, Repo string
	Title, Body string
	// Poster is the login of the Issue's author (the bot that submitted).
	Poster   string
	PosterID int64
	// GrantID is the grant the Issue is bound to; 0 after RebindIssue.
	GrantID    int64
	RequestKey string
}

// grantState is the grant model, kept in state.grants and guarded by
// Emulator.mu like the rest of the state.
type grantState struct {
	grants    map[int64]*grant
	nextGrant int64
	issues    map[int64]*issue  // by ID, deleted ones included
	byIndex   map[string]*issue // live Issues by "repoID/index"
	nextIssue int64
	pageClamp int // when > 0, the list route's page width is at most this
	faults    map[GrantOp]*grantFaultEntry
}

type grant struct {
	id        int64
	repo      *Repo
	agent     *User
	preparer  *User
	approver  *User
	state     string
	revision  int64
	task      string
	summary   string
	digest    string
	created   time.Time
	updated   time.Time
	confirmed time.Time // zero: not confirmed
	approved  time.Time
	withdrawn time.Time
	subs      map[string]*submission // by request key
}

// submission is a committed request key: it keeps the Issue's historical
// ID, index and URL even after the Issue is deleted or rebound, so the key
// is never available again.
type submission struct {
	key        string
	digest     string
	title      string
	body       string
	issue      *issue
	issueID    int64
	issueIndex int64
	issueURL   string
	actor      *User
	created    time.Time
}

type issue struct {
	id, index  int64
	repo       *Repo
	poster     *User
	title      string
	body       string
	created    time.Time
	updated    time.Time
	deleted    bool
	grantID    int64 // 0 once the binding changed
	requestKey string
}

// grantsLocked returns the grant model, creating it on first use. Callers hold e.mu.
func (e *Emulator) grantsLocked() *grantState {
	if e.st.grants == nil {
		e.st.grants = &grantState{
			grants:    map[int64]*grant{},
			nextGrant: firstGrantID,
			issues:    map[int64]*issue{},
			byIndex:   map[string]*issue{},
			nextIssue: firstIssueID,
			faults:    map[GrantOp]*grantFaultEntry{},
		}
	}
	return e.st.grants
}

// proposalDigest is the digest of a proposal: SHA-256 of a fixed JSON
// serialisation of the triple's schema and version, the repository and
// agent IDs, and the whole text. A bot proves it read this proposal by
// repeating the digest.
func proposalDigest(repoID, agentID int64, p GrantProposal) string {
	b, _ := json.Marshal(struct {
		Schema       string `json:"schema"`
		Version      int    `json:"version"`
		RepositoryID int64  `json:"repository_id"`
		AgentID      int64  `json:"agent_id"`
		Task         string `json:"task"`
		Summary      string `json:"summary"`
	}{ProposalSchema, ProposalVersion, repoID, agentID, p.Task, p.Summary})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// collaboratesLocked reports whether u has explicit access to r: its owner
// or a collaborator. Agent work needs it: missing access is an explicit
// collaboration prerequisite, never implied
// (docs/architecture.md#agent-work-grant-contract). Callers hold e.mu.
func (r *Repo) collaboratesLocked(u *User) bool {
	return u != nil && (u == r.owner || r.isCollaboratorLocked(u))
}

// PrepareGrant is the human preparation of a grant (a browser-session
// operation in Core, never reachable through MCP): preparer, who needs
// write access to the repository, names agent, who must already
// collaborate on it. The grant starts awaiting_agent with state revision 1.
func (e *Emulator) PrepareGrant(owner, repo, agent, preparer string, p GrantProposal) (Grant, error) {
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return Grant{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, h := e.userLocked(agent), e.userLocked(preparer)
	switch {
	case a == nil:
		return Grant{}, fmt.Errorf("%w: user %s", ErrNotFound, agent)
	case h == nil:
		return Grant{}, fmt.Errorf("%w: user %s", ErrNotFound, preparer)
	case a == h:
		return Grant{}, fmt.Errorf("%w: the agent cannot prepare its own grant", ErrInvalid)
	case r.accessLocked(h) < accessWrite:
		return Grant{}, fmt.Errorf("%w: %s cannot write to %s", ErrInvalid, preparer, r.FullName())
	case !r.collaboratesLocked(a):
		return Grant{}, fmt.Errorf("%w: %s does not collaborate on %s", ErrInvalid, agent, r.FullName())
	}
	gs := e.grantsLocked()
	now := e.nowLocked()
	g := &grant{
		id: gs.nextGrant, repo: r, agent: a, preparer: h, state: GrantAwaitingAgent, revision: 1,
		task: p.Task, summary: p.Summary, digest: proposalDigest(r.id, a.ID, p),
		created: now, updated: now, subs: map[string]*submission{},
	}
	gs.nextGrant++
	gs.grants[g.id] = g
	return g.snapshotLocked(), nil
}

// ReviseGrant replaces a grant's proposal (a human edit): the digest
// changes with the text, the grant goes back to awaiting_agent, and a bot
// repeating the old digest gets 409.
func (e *Emulator) ReviseGrant(id int64, by string, p GrantProposal) (Grant, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, _, err := e.humanOpLocked(id, by)
	if err != nil {
		return Grant{}, err
	}
	if g.state == GrantRevoked {
		return Grant{}, fmt.Errorf("%w: grant %d is revoked", ErrInvalid, id)
	}
	g.task, g.summary, g.digest = p.Task, p.Summary, proposalDigest(g.repo.id, g.agent.ID, p)
	g.state, g.confirmed, g.approved, g.approver = GrantAwaitingAgent, time.Time{}, time.Time{}, nil
	g.revision++
	g.updated = e.nowLocked()
	return g.snapshotLocked(), nil
}

// ApproveGrant is the human approval of a grant the bot confirmed: only
// awaiting_human becomes active. The approver needs write access and
// cannot be the agent (bot confirmation is not human approval).
func (e *Emulator) ApproveGrant(id int64, approver string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, h, err := e.humanOpLocked(id, approver)
	if err != nil {
		return err
	}
	if g.state != GrantAwaitingHuman {
		return fmt.Errorf("%w: grant %d is %s, not %s", ErrInvalid, id, g.state, GrantAwaitingHuman)
	}
	now := e.nowLocked()
	g.state, g.approver, g.approved, g.updated = GrantActive, h, now, now
	g.revision++
	return nil
}

// WithdrawGrant is the human withdrawal of a grant in any live state: it
// becomes revoked, which refuses every later confirmation or submission,
// while receipts of earlier submissions stay readable.
func (e *Emulator) WithdrawGrant(id int64, by string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, _, err := e.humanOpLocked(id, by)
	if err != nil {
		return err
	}
	if g.state == GrantRevoked {
		return fmt.Errorf("%w: grant %d is already revoked", ErrInvalid, id)
	}
	now := e.nowLocked()
	g.state, g.withdrawn, g.updated = GrantRevoked, now, now
	g.revision++
	return nil
}

// humanOpLocked resolves a grant and a human with write access to its
// repository who is not its agent. Callers hold e.mu.
func (e *Emulator) humanOpLocked(id int64, login string) (*grant, *User, error) {
	g := e.grantsLocked().grants[id]
	if g == nil {
		return nil, nil, fmt.Errorf("%w: grant %d", ErrNotFound, id)
	}
	h := e.userLocked(login)
	switch {
	case h == nil:
		return nil, nil, fmt.Errorf("%w: user %s", ErrNotFound, login)
	case h == g.agent:
		return nil, nil, fmt.Errorf("%w: the agent cannot act as the human of its own grant", ErrInvalid)
	case g.repo.accessLocked(h) < accessWrite:
		return nil, nil, fmt.Errorf("%w: %s cannot write to %s", ErrInvalid, login, g.repo.FullName())
	}
	return g, h, nil
}

// Grant returns a snapshot of a grant.
func (e *Emulator) Grant(id int64) (Grant, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.grantsLocked().grants[id]
	if g == nil {
		return Grant{}, fmt.Errorf("%w: grant %d", ErrNotFound, id)
	}
	return g.snapshotLocked(), nil
}

func (g *grant) snapshotLocked() Grant {
	return Grant{
		ID: g.id, RepositoryID: g.repo.id, Owner: g.repo.owner.Login, Repo: g.repo.name,
		Agent: g.agent.Login, AgentID: g.agent.ID, State: g.state, StateRevision: g.revision,
		Digest: g.digest, Task: g.task, Summary: g.summary, Submissions: len(g.subs),
	}
}

// RemoveCollaborator takes a user's collaboration away (lost access): on a
// private repository the user no longer sees it (404), on a public one
// agent work is refused (403).
func (e *Emulator) RemoveCollaborator(owner, repo, login string) error {
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.userLocked(login)
	if u == nil || !r.isCollaboratorLocked(u) {
		return fmt.Errorf("%w: %s does not collaborate on %s", ErrNotFound, login, r.FullName())
	}
	delete(r.collaborators, u.ID)
	return nil
}

// DeleteIssue deletes an Issue (a privileged setup operation). Receipts of
// the submission that created it then say issue_deleted and keep its
// historical ID, index and URL; the request key stays used.
func (e *Emulator) DeleteIssue(owner, repo string, index int64) error {
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	gs := e.grantsLocked()
	is := gs.byIndex[indexKey(r.id, index)]
	if is == nil {
		return fmt.Errorf("%w: issue %s#%d", ErrNotFound, r.FullName(), index)
	}
	is.deleted = true
	delete(gs.byIndex, indexKey(r.id, index))
	return nil
}

// RebindIssue detaches an Issue from the grant whose submission created it
// (a human re-bound it elsewhere). Its receipt then says
// issue_binding_changed; the Issue itself stays.
func (e *Emulator) RebindIssue(owner, repo string, index int64) error {
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	is := e.grantsLocked().byIndex[indexKey(r.id, index)]
	if is == nil || is.grantID == 0 {
		return fmt.Errorf("%w: bound issue %s#%d", ErrNotFound, r.FullName(), index)
	}
	is.grantID = 0
	is.updated = e.nowLocked()
	return nil
}

// Issues returns the live Issues of a repository created by submissions,
// in index order.
func (e *Emulator) Issues(owner, repo string) ([]Issue, error) {
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Issue
	for _, is := range e.grantsLocked().byIndex {
		if is.repo == r {
			out = append(out, is.snapshotLocked())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// Issue returns one live Issue by index.
func (e *Emulator) Issue(owner, repo string, index int64) (Issue, error) {
	r, err := e.lookupRepo(owner, repo)
	if err != nil {
		return Issue{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	is := e.grantsLocked().byIndex[indexKey(r.id, index)]
	if is == nil {
		return Issue{}, fmt.Errorf("%w: issue %s#%d", ErrNotFound, r.FullName(), index)
	}
	return is.snapshotLocked(), nil
}

func (is *issue) snapshotLocked() Issue {
	return Issue{
		ID: is.id, Index: is.index, Owner: is.repo.owner.Login, Repo: is.repo.name,
		Title: is.title, Body: is.body, Poster: is.poster.Login, PosterID: is.poster.ID,
		GrantID: is.grantID, RequestKey: is.requestKey,
	}
}

func indexKey(repoID, index int64) string {
	return strconv.FormatInt(repoID, 10) + "/" + strconv.FormatInt(index, 10)
}

// outcomeLocked is what a receipt says about its Issue now.
func (s *submission) outcomeLocked(g *grant) string {
	switch {
	case s.issue.deleted:
		return OutcomeIssueDeleted
	case s.issue.grantID != g.id:
		return OutcomeIssueBindingChanged
	default:
		return OutcomeSubmitted
	}
}

// submitLocked commits a new submission: an Issue by the agent in the
// grant's repository (its index shared with pull requests, as in Forgejo)
// and the receipt of the request key. Callers hold e.mu.
func (e *Emulator) submitLocked(g *grant, actor *User, key, digest, title, body string) *submission {
	gs := e.grantsLocked()
	now := e.nowLocked()
	r := g.repo
	is := &issue{
		id: gs.nextIssue, index: r.nextIndex, repo: r, poster: actor, title: title, body: body,
		created: now, updated: now, grantID: g.id, requestKey: key,
	}
	gs.nextIssue++
	r.nextIndex++
	r.updated = now
	gs.issues[is.id] = is
	gs.byIndex[indexKey(r.id, is.index)] = is
	s := &submission{
		key: key, digest: digest, title: title, body: body, issue: is,
		issueID: is.id, issueIndex: is.index, issueURL: e.issueHTMLURL(r, is.index),
		actor: actor, created: now,
	}
	g.subs[key] = s
	g.updated = now
	return s
}

func (e *Emulator) issueHTMLURL(r *Repo, index int64) string {
	return fmt.Sprintf("%s/%s/%s/issues/%d", e.origin, r.owner.Login, r.name, index)
}
