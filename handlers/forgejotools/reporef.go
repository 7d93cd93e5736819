package forgejotools

// RepoRef is the repository a Forgejo tool acts on, as every tool's
// arguments name it: the members, Forgejo's character set and their
// descriptions are declared here once and embedded in each argument
// struct (args flattens embeds), so no tool can drift from the others.
// "." and "..", which the pattern admits, are refused when the request
// path is built.
type RepoRef struct {
	Owner string `json:"owner" arg:"required" pattern:"^[A-Za-z0-9_.-]{1,100}$" desc:"Repository owner (user or organization name)."`
	Repo  string `json:"repo" arg:"required" pattern:"^[A-Za-z0-9_.-]{1,100}$" desc:"Repository name."`
}

// pullRef is one pull request of a repository.
type pullRef struct {
	RepoRef
	Index int64 `json:"index" arg:"required" min:"1" desc:"Pull request index (the number shown in the forge)."`
}
