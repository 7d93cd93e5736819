package forgejoemu

import (
	"context"
	"fmt"
	"time"
)

// apiBranchInfo is Forgejo's structs.PRBranchInfo.
type apiBranchInfo struct {
	Name       string         `json:"label"`
	Ref        string         `json:"ref"`
	Sha        string         `json:"sha"`
	RepoID     int64          `json:"repo_id"`
	Repository *apiRepository `json:"repo"`
}

// apiPull is Forgejo's structs.PullRequest, members in Forgejo's order.
type apiPull struct {
	ID                      int64          `json:"id"`
	URL                     string         `json:"url"`
	Index                   int64          `json:"number"`
	Poster                  *apiUser       `json:"user"`
	Title                   string         `json:"title"`
	Body                    string         `json:"body"`
	Labels                  []struct{}     `json:"labels"`
	Milestone               *struct{}      `json:"milestone"`
	Assignee                *apiUser       `json:"assignee"`
	Assignees               []*apiUser     `json:"assignees"`
	RequestedReviewers      []*apiUser     `json:"requested_reviewers"`
	RequestedReviewersTeams []struct{}     `json:"requested_reviewers_teams"`
	State                   string         `json:"state"`
	Draft                   bool           `json:"draft"`
	IsLocked                bool           `json:"is_locked"`
	Comments                int            `json:"comments"`
	ReviewComments          int            `json:"review_comments"`
	Additions               int            `json:"additions"`
	Deletions               int            `json:"deletions"`
	ChangedFiles            int            `json:"changed_files"`
	HTMLURL                 string         `json:"html_url"`
	DiffURL                 string         `json:"diff_url"`
	PatchURL                string         `json:"patch_url"`
	Mergeable               bool           `json:"mergeable"`
	HasMerged               bool           `json:"merged"`
	Merged                  *time.Time     `json:"merged_at"`
	MergedCommitID          *string        `json:"merge_commit_sha"`
	MergedBy                *apiUser       `json:"merged_by"`
	AllowMaintainerEdit     bool           `json:"allow_maintainer_edit"`
	Base                    *apiBranchInfo `json:"base"`
	Head                    *apiBranchInfo `json:"head"`
	MergeBase               string         `json:"merge_base"`
	Deadline                *time.Time     `json:"due_date"`
	Created                 *time.Time     `json:"created_at"`
	Updated                 *time.Time     `json:"updated_at"`
	Closed                  *time.Time     `json:"closed_at"`
	PinOrder                int            `json:"pin_order"`
}

// toAPIPulls is Forgejo's ToAPIPullRequest for each pull request of one
// repository, as the caller sees them. Branch tips come from one
// for-each-ref: base.sha is the base branch tip; head.ref and head.sha are the
// head branch and its tip while it exists, else refs/pull/<index>/head and
// that ref's commit. The stat is the diff from merge base to head.
func (e *Emulator) toAPIPulls(ctx context.Context, r *Repo, doer *User, pulls []*Pull) ([]*apiPull, error) {
	refs, err := r.refs(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	mode := r.accessLocked(doer)
	out := make([]*apiPull, len(pulls))
	for i, p := range pulls {
		out[i] = e.toAPIPullLocked(r, p, doer, mode, refs)
	}
	mergeBases := make([]string, len(pulls))
	for i, p := range pulls {
		mergeBases[i] = p.mergeBase
	}
	e.mu.Unlock()
	for i, a := range out {
		s := r.shortStat(ctx, mergeBases[i], a.Head.Sha)
		a.ChangedFiles, a.Additions, a.Deletions = s.files, s.additions, s.deletions
	}
	return out, nil
}

// toAPIPullLocked renders one pull request. Callers hold e.mu.
func (e *Emulator) toAPIPullLocked(r *Repo, p *Pull, doer *User, mode accessMode, refs map[string]string) *apiPull {
	html := fmt.Sprintf("%s/pulls/%d", e.repoHTMLURL(r), p.index)
	repo := e.toAPIRepoLocked(r, mode)
	state := "open"
	if p.closed {
		state = "closed"
	}
	a := &apiPull{
		ID:        p.id,
		URL:       html,
		Index:     p.index,
		Poster:    e.userFor(p.poster, doer),
		Title:     p.title,
		Body:      p.body,
		Labels:    []struct{}{},
		State:     state,
		HTMLURL:   html,
		DiffURL:   html + ".diff",
		PatchURL:  html + ".patch",
		Mergeable: true,
		HasMerged: p.merged,
		MergeBase: p.mergeBase,
		Created:   timePtr(p.created),
		Updated:   timePtr(p.updated),
		Base: &apiBranchInfo{
			Name: p.base, Ref: p.base, Sha: refs["refs/heads/"+p.base],
			RepoID: r.id, Repository: repo,
		},
		Head: &apiBranchInfo{Name: p.head, RepoID: r.id, Repository: repo},
	}
	if tip, ok := refs["refs/heads/"+p.head]; ok {
		a.Head.Ref, a.Head.Sha = p.head, tip
	} else {
		a.Head.Ref, a.Head.Sha = p.HeadRef(), refs[p.HeadRef()]
	}
	if p.closed {
		a.Closed = timePtr(p.closedAt)
	}
	if p.merged {
		a.Merged = timePtr(p.mergedAt)
		commit := p.mergedCommit
		a.MergedCommitID = &commit
		a.MergedBy = e.toAPIUser(p.mergedBy, false, false)
	}
	return a
}

func timePtr(t time.Time) *time.Time { return &t }
