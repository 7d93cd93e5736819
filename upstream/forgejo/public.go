package forgejo

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// PageWidth is the page size the gateway asks Forgejo for; Forgejo's default,
// and below its clamp of 50.
const PageWidth = 30

// Repository is the documented, trimmed subset of Forgejo's repository object.
type Repository struct {
	ID            int64     `json:"id"`
	Owner         string    `json:"owner"`
	Name          string    `json:"name"`
	FullName      string    `json:"full_name"`
	Description   string    `json:"description"`
	Private       bool      `json:"private"`
	Fork          bool      `json:"fork"`
	Archived      bool      `json:"archived"`
	Empty         bool      `json:"empty"`
	DefaultBranch string    `json:"default_branch"`
	HTMLURL       string    `json:"html_url"`
	CloneURL      string    `json:"clone_url"`
	Stars         int64     `json:"stars_count"`
	Forks         int64     `json:"forks_count"`
	OpenPulls     int64     `json:"open_pr_counter"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// PullRequest is the documented, trimmed subset of Forgejo's pull request object.
type PullRequest struct {
	ID        int64      `json:"id"`
	Number    int64      `json:"number"`
	Title     string     `json:"title"`
	Body      *string    `json:"body,omitempty"`
	State     string     `json:"state"`
	Draft     bool       `json:"draft"`
	Author    string     `json:"author"`
	HTMLURL   string     `json:"html_url"`
	Head      Branch     `json:"head"`
	Base      Branch     `json:"base"`
	MergeBase string     `json:"merge_base"`
	Merged    bool       `json:"merged"`
	MergedAt  *time.Time `json:"merged_at"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	ClosedAt  *time.Time `json:"closed_at"`
}

// Branch is one side of a pull request.
type Branch struct {
	Label        string `json:"label"`
	Ref          string `json:"ref"`
	SHA          string `json:"sha"`
	RepositoryID int64  `json:"repository_id"`
}

// Listing is one answer of a paginated native list: the items of the
// page asked for, with the continuation derived from the native
// X-Total-Count and Link headers. (A "page" is only a page of
// get_pull_request_diff, diffpage.Page; the member "page" here is the
// native list's page number.)
type Listing[T any] struct {
	Items    []T    `json:"items"`
	Page     int64  `json:"page"`
	NextPage *int64 `json:"next_page"`
	HasMore  bool   `json:"has_more"`
	Total    *int64 `json:"total"`
}

// native shapes: only the members the trimmed types keep are decoded.
type nativeUser struct {
	Login string `json:"login"`
}

// nativeRepo decodes Forgejo's repository object: the members Repository
// keeps decode into it directly; owner is an object natively.
type nativeRepo struct {
	Repository
	Owner nativeUser `json:"owner"`
}

func (n nativeRepo) trim() Repository {
	r := n.Repository
	r.Owner = n.Owner.Login
	return r
}

type nativeBranch struct {
	Label  string `json:"label"`
	Ref    string `json:"ref"`
	SHA    string `json:"sha"`
	RepoID int64  `json:"repo_id"`
}

// nativePull decodes Forgejo's pull request object into the members
// PullRequest keeps; the poster, the branch sides and the body are shaped
// differently natively.
type nativePull struct {
	PullRequest
	User nativeUser   `json:"user"`
	Head nativeBranch `json:"head"`
	Base nativeBranch `json:"base"`
	Body string       `json:"body"`
}

func (n nativePull) trim(withBody bool) PullRequest {
	p := n.PullRequest
	p.Author = n.User.Login
	p.Head = Branch{Label: n.Head.Label, Ref: n.Head.Ref, SHA: n.Head.SHA, RepositoryID: n.Head.RepoID}
	p.Base = Branch{Label: n.Base.Label, Ref: n.Base.Ref, SHA: n.Base.SHA, RepositoryID: n.Base.RepoID}
	p.Body = nil
	if withBody {
		b := n.Body
		p.Body = &b
	}
	return p
}

// SearchRepositories is GET /api/v1/repos/search?q=…&limit=30&page=….
func (c *Client) SearchRepositories(ctx context.Context, q string, page int64) (*Listing[Repository], error) {
	var out struct {
		OK   bool         `json:"ok"`
		Data []nativeRepo `json:"data"`
	}
	h, err := c.getJSON(ctx, listQuery(page, url.Values{"q": {q}}), &out, routeSearchRepos)
	if err != nil {
		return nil, err
	}
	if !out.OK {
		return nil, toolerr.New(toolerr.UpstreamMalformed, "Forgejo search answered ok=false")
	}
	items := make([]Repository, 0, len(out.Data))
	for _, r := range out.Data {
		items = append(items, r.trim())
	}
	return newListing(items, page, h), nil
}

// GetRepository is GET /api/v1/repos/{owner}/{repo}.
func (c *Client) GetRepository(ctx context.Context, owner, repo string) (*Repository, error) {
	var out nativeRepo
	if _, err := c.getJSON(ctx, nil, &out, routeRepo, owner, repo); err != nil {
		return nil, err
	}
	r := out.trim()
	return &r, nil
}

// ListPullRequests is GET /api/v1/repos/{owner}/{repo}/pulls?state=…&page=….
func (c *Client) ListPullRequests(ctx context.Context, owner, repo, state string, page int64) (*Listing[PullRequest], error) {
	// Always name the state: Forgejo's API documents "open" as the default,
	// but its code lists every state when the parameter is absent.
	if state == "" {
		state = "open"
	}
	extra := url.Values{"state": {state}}
	var out []nativePull
	h, err := c.getJSON(ctx, listQuery(page, extra), &out, routePulls, owner, repo)
	if err != nil {
		return nil, err
	}
	items := make([]PullRequest, 0, len(out))
	for _, p := range out {
		items = append(items, p.trim(false))
	}
	return newListing(items, page, h), nil
}

// GetPullRequest is GET /api/v1/repos/{owner}/{repo}/pulls/{index}.
func (c *Client) GetPullRequest(ctx context.Context, owner, repo string, index int64) (*PullRequest, error) {
	var out nativePull
	if _, err := c.getJSON(ctx, nil, &out, routePull, owner, repo, strconv.FormatInt(index, 10)); err != nil {
		return nil, err
	}
	p := out.trim(true)
	return &p, nil
}

func listQuery(page int64, extra url.Values) url.Values {
	q := url.Values{"limit": {strconv.Itoa(PageWidth)}, "page": {strconv.FormatInt(page, 10)}}
	for k, v := range extra {
		q[k] = v
	}
	return q
}
