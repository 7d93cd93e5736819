package forgejo

import (
	"net/http"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// The routes of every request the client makes. Each client method builds
// its path from its route (upstream.Route.Segments), so the path it sends
// cannot drift from the template its spans name; a test checks the
// emulated Forgejo (test/forgejoemu) serves every one of them.
var (
	routeSearchRepos     = upstream.Route{Method: http.MethodGet, Template: "/api/v1/repos/search"}
	routeRepo            = upstream.Route{Method: http.MethodGet, Template: "/api/v1/repos/{owner}/{repo}"}
	routePulls           = upstream.Route{Method: http.MethodGet, Template: "/api/v1/repos/{owner}/{repo}/pulls"}
	routePullDiff        = upstream.Route{Method: http.MethodGet, Template: "/api/v1/repos/{owner}/{repo}/pulls/{index}.diff"}
	routePull            = upstream.Route{Method: http.MethodGet, Template: "/api/v1/repos/{owner}/{repo}/pulls/{index}"}
	routeGrants          = upstream.Route{Method: http.MethodGet, Template: "/api/v1/agent-work-grants"}
	routeGrant           = upstream.Route{Method: http.MethodGet, Template: "/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}"}
	routeGrantConfirm    = upstream.Route{Method: http.MethodPost, Template: "/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}/confirm"}
	routeGrantIssues     = upstream.Route{Method: http.MethodPost, Template: "/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}/issues"}
	routeGrantSubmission = upstream.Route{Method: http.MethodGet, Template: "/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}/submissions/{key}"}
)

// ClientRoutes are every route the client requests. The diff route comes
// before the pull request route, whose {index} would match its segment.
var ClientRoutes = []upstream.Route{
	routeSearchRepos, routeRepo, routePulls, routePullDiff, routePull,
	routeGrants, routeGrant, routeGrantConfirm, routeGrantIssues, routeGrantSubmission,
}

// Routes are the templates of ClientRoutes, for trace spans
// (upstream.Tracing): a span names the template, never the owner,
// repository or index of the concrete path.
var Routes = upstream.Templates(ClientRoutes)
