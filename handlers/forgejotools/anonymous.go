// Package forgejotools is the Forgejo toolset served at /mcp/forgejo: the
// four anonymous public reads (this file) and the authenticated PR diff and
// agent work-grant tools (sibling files).
package forgejotools

import (
	"context"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

type searchArgs struct {
	Q    string `json:"q" arg:"required" maxlen:"255" desc:"Search keyword matched against repository names (may be empty to list all public repositories)."`
	Page *int64 `json:"page" min:"1" desc:"Page number, 1-based; 30 results per page."`
}

type listPullsArgs struct {
	RepoRef
	State *string `json:"state" enum:"open,closed,all" desc:"Filter by state; Forgejo's default is open."`
	Page  *int64  `json:"page" min:"1" desc:"Page number, 1-based; 30 pull requests per page."`
}

// anonymousPolicy: public reads, no credential, read budget.
var anonymousPolicy = middleware.ToolPolicy{Anonymous: true}

// AnonymousTools returns the four public read tools. They never send a
// credential upstream, even when the caller has one: the client methods
// they call take none. A nil client (no forgejo.origin configured) makes
// every call answer upstream_unconfigured.
func AnonymousTools(c *forgejo.Client) []toolset.Tool {
	return []toolset.Tool{
		toolset.Typed(toolset.Tool{
			Name: "search_repositories", Title: "Search repositories",
			Description: "Search the forge's public repositories by keyword. Returns a page of repositories with next_page/has_more.",
			Policy:      anonymousPolicy, Unavailable: unavailable(c), ReadOnly: true, Idempotent: true, OpenWorld: true,
		}, func(ctx context.Context, in searchArgs) (any, error) {
			return c.SearchRepositories(ctx, in.Q, pageOf(in.Page))
		}),
		toolset.Typed(toolset.Tool{
			Name: "get_repository", Title: "Get repository",
			Description: "Get one public repository by owner and name.",
			Policy:      anonymousPolicy, Unavailable: unavailable(c), ReadOnly: true, Idempotent: true, OpenWorld: true,
		}, func(ctx context.Context, in RepoRef) (any, error) {
			return c.GetRepository(ctx, in.Owner, in.Repo)
		}),
		toolset.Typed(toolset.Tool{
			Name: "list_pull_requests", Title: "List pull requests",
			Description: "List a public repository's pull requests, 30 per page, optionally filtered by state (open, closed, all).",
			Policy:      anonymousPolicy, Unavailable: unavailable(c), ReadOnly: true, Idempotent: true, OpenWorld: true,
		}, func(ctx context.Context, in listPullsArgs) (any, error) {
			state := ""
			if in.State != nil {
				state = *in.State
			}
			return c.ListPullRequests(ctx, in.Owner, in.Repo, state, pageOf(in.Page))
		}),
		toolset.Typed(toolset.Tool{
			Name: "get_pull_request", Title: "Get pull request",
			Description: "Get one pull request of a public repository: title, body, state, head/base refs and SHAs, merge base, timestamps.",
			Policy:      anonymousPolicy, Unavailable: unavailable(c), ReadOnly: true, Idempotent: true, OpenWorld: true,
		}, func(ctx context.Context, in pullRef) (any, error) {
			return c.GetPullRequest(ctx, in.Owner, in.Repo, in.Index)
		}),
	}
}

func pageOf(p *int64) int64 {
	if p == nil {
		return 1
	}
	return *p
}

// unavailable is the answer of every Forgejo tool when no Forgejo origin is
// configured (a nil client), or nil when one is.
func unavailable(c *forgejo.Client) error {
	if c == nil {
		return toolerr.New(toolerr.UpstreamUnconfigured, "no Forgejo origin is configured on this gateway (forgejo.origin)")
	}
	return nil
}
