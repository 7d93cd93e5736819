package forgejoemu

import (
	"fmt"
	"time"
)

// The native JSON of agent work grants. It is not public Forgejo API: it is
// designed from the agent work grant contract
// (docs/architecture.md#agent-work-grant-contract) and documented in
// doc.go; member order is fixed
// by these structs.

// apiParticipant is a user taking part in a grant: the agent (bot), the
// human who prepared or approved it, or a submission's actor.
type apiParticipant struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
}

// apiGrantRepository names the grant's repository.
type apiGrantRepository struct {
	ID       int64  `json:"id"`
	Owner    string `json:"owner"`
	Name     string `json:"name"`
	FullName string `json:"full_name"`
	HTMLURL  string `json:"html_url"`
}

// apiProposal is the proposal triple and its text.
type apiProposal struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	Digest  string `json:"digest"`
	Task    string `json:"task"`
	Summary string `json:"summary"`
}

// apiGrant is a grant. state_revision is the server's CAS counter: it
// changes with every state change, and no client ever sends it.
type apiGrant struct {
	ID               int64              `json:"id"`
	Repository       apiGrantRepository `json:"repository"`
	Agent            apiParticipant     `json:"agent"`
	PreparedBy       apiParticipant     `json:"prepared_by"`
	ApprovedBy       *apiParticipant    `json:"approved_by"`
	State            string             `json:"state"`
	StateRevision    int64              `json:"state_revision"`
	Proposal         apiProposal        `json:"proposal"`
	SubmissionCount  int                `json:"submission_count"`
	AgentConfirmedAt *time.Time         `json:"agent_confirmed_at"`
	ApprovedAt       *time.Time         `json:"approved_at"`
	WithdrawnAt      *time.Time         `json:"withdrawn_at"`
	CreatedAt        time.Time          `json:"created_at"`
	UpdatedAt        time.Time          `json:"updated_at"`
}

// apiTriple is the proposal triple a submission was made under.
type apiTriple struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	Digest  string `json:"digest"`
}

// apiSubmissionIssue is the historical binding of a receipt: kept after the
// Issue is deleted or rebound.
type apiSubmissionIssue struct {
	ID      int64  `json:"id"`
	Index   int64  `json:"index"`
	HTMLURL string `json:"html_url"`
}

// apiSubmission is the receipt of a request key.
type apiSubmission struct {
	RequestKey   string             `json:"request_key"`
	GrantID      int64              `json:"grant_id"`
	RepositoryID int64              `json:"repository_id"`
	Proposal     apiTriple          `json:"proposal"`
	Outcome      string             `json:"outcome"`
	ReviewState  string             `json:"review_state"`
	Issue        apiSubmissionIssue `json:"issue"`
	Actor        apiParticipant     `json:"actor"`
	CreatedAt    time.Time          `json:"created_at"`
}

// apiGrantSubmission is the body of a submission and of its readback.
type apiGrantSubmission struct {
	Grant      apiGrant      `json:"grant"`
	Submission apiSubmission `json:"submission"`
}

// apiIssue is the subset of Forgejo's structs.Issue the emulator serves for
// Issues created by submissions, members in Forgejo's order.
type apiIssue struct {
	ID         int64          `json:"id"`
	URL        string         `json:"url"`
	HTMLURL    string         `json:"html_url"`
	Index      int64          `json:"number"`
	Poster     *apiUser       `json:"user"`
	Title      string         `json:"title"`
	Body       string         `json:"body"`
	Labels     []any          `json:"labels"`
	State      string         `json:"state"`
	IsLocked   bool           `json:"is_locked"`
	Comments   int            `json:"comments"`
	Created    time.Time      `json:"created_at"`
	Updated    time.Time      `json:"updated_at"`
	Closed     *time.Time     `json:"closed_at"`
	Repository apiIssueRepoID `json:"repository"`
}

// apiIssueRepoID is Forgejo's structs.RepositoryMeta.
type apiIssueRepoID struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Owner    string `json:"owner"`
	FullName string `json:"full_name"`
}

func participant(u *User) apiParticipant { return apiParticipant{ID: u.ID, Login: u.Login} }

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// toAPIGrantLocked renders a grant. Callers hold e.mu.
func (e *Emulator) toAPIGrantLocked(g *grant) apiGrant {
	a := apiGrant{
		ID: g.id,
		Repository: apiGrantRepository{
			ID: g.repo.id, Owner: g.repo.owner.Login, Name: g.repo.name,
			FullName: g.repo.FullName(), HTMLURL: e.origin + "/" + g.repo.FullName(),
		},
		Agent: participant(g.agent), PreparedBy: participant(g.preparer),
		State: g.state, StateRevision: g.revision,
		Proposal: apiProposal{
			Schema: ProposalSchema, Version: ProposalVersion, Digest: g.digest,
			Task: g.task, Summary: g.summary,
		},
		SubmissionCount:  len(g.subs),
		AgentConfirmedAt: timeOrNil(g.confirmed), ApprovedAt: timeOrNil(g.approved),
		WithdrawnAt: timeOrNil(g.withdrawn), CreatedAt: g.created, UpdatedAt: g.updated,
	}
	if g.approver != nil {
		p := participant(g.approver)
		a.ApprovedBy = &p
	}
	return a
}

// toAPISubmissionLocked renders a receipt with its current outcome. Callers hold e.mu.
func (e *Emulator) toAPISubmissionLocked(g *grant, s *submission) apiGrantSubmission {
	return apiGrantSubmission{
		Grant: e.toAPIGrantLocked(g),
		Submission: apiSubmission{
			RequestKey: s.key, GrantID: g.id, RepositoryID: g.repo.id,
			Proposal:    apiTriple{Schema: ProposalSchema, Version: ProposalVersion, Digest: s.digest},
			Outcome:     s.outcomeLocked(g),
			ReviewState: ReviewAwaitingReview,
			Issue:       apiSubmissionIssue{ID: s.issueID, Index: s.issueIndex, HTMLURL: s.issueURL},
			Actor:       participant(s.actor),
			CreatedAt:   s.created,
		},
	}
}

// toAPIIssueLocked renders an Issue as Forgejo's issue object. Callers hold e.mu.
func (e *Emulator) toAPIIssueLocked(is *issue, doer *User) apiIssue {
	r := is.repo
	return apiIssue{
		ID: is.id, Index: is.index,
		URL:     fmt.Sprintf("%s/api/v1/repos/%s/issues/%d", e.origin, r.FullName(), is.index),
		HTMLURL: e.issueHTMLURL(r, is.index),
		Poster:  e.userFor(is.poster, doer), Title: is.title, Body: is.body,
		Labels: []any{}, State: "open", Created: is.created, Updated: is.updated,
		Repository: apiIssueRepoID{ID: r.id, Name: r.name, Owner: r.owner.Login, FullName: r.FullName()},
	}
}
