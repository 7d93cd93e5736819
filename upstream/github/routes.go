package github

// Routes are the route templates of every request the client makes, for
// trace spans (upstream.Tracing): a span names the template, never the
// owner, repository, path or branch of the concrete path.
var Routes = []string{
	"/repos/{owner}/{repo}/contents/{path...}",
	"/repos/{owner}/{repo}/branches/{branch...}",
	"/app/installations/{installation_id}/access_tokens",
}
