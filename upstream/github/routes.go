package github

import (
	"net/http"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// The routes of every request the client makes. Each request's path is
// built from its route (upstream.Route.Segments), so it cannot drift from
// the template its spans name; a test checks the emulated GitHub
// (test/githubemu) serves every one of them.
var (
	routeContents = upstream.Route{Method: http.MethodGet, Template: "/repos/{owner}/{repo}/contents/{path...}"}
	routeBranch   = upstream.Route{Method: http.MethodGet, Template: "/repos/{owner}/{repo}/branches/{branch...}"}
	routeMint     = upstream.Route{Method: http.MethodPost, Template: "/app/installations/{installation_id}/access_tokens"}
)

// ClientRoutes are every route the client requests.
var ClientRoutes = []upstream.Route{routeContents, routeBranch, routeMint}

// Routes are the templates of ClientRoutes, for trace spans
// (upstream.Tracing): a span names the template, never the owner,
// repository, path or branch of the concrete path.
var Routes = upstream.Templates(ClientRoutes)
