package forgejo

// Routes are the route templates of every request the client makes, for
// trace spans (upstream.Tracing): a span names the template, never the
// owner, repository or index of the concrete path. A route added to the
// client belongs here, or its spans say "other".
var Routes = []string{
	"/api/v1/repos/search",
	"/api/v1/repos/{owner}/{repo}",
	"/api/v1/repos/{owner}/{repo}/pulls",
	"/api/v1/repos/{owner}/{repo}/pulls/{index}.diff",
	"/api/v1/repos/{owner}/{repo}/pulls/{index}",
	"/api/v1/agent-work-grants",
	"/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}",
	"/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}/confirm",
	"/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}/issues",
	"/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}/submissions/{key}",
}
