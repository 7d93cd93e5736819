package github

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agent-gateway/agent-gateway/internal/toolerr"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// maxBranchResponse bounds the branch route's answer: a few kilobytes even
// with protection details.
const maxBranchResponse = 256 << 10

// BranchRequest names one branch of a repository, and the installation
// that may read it.
type BranchRequest struct {
	InstallationID int64
	Owner, Repo    string
	Branch         string // a short branch name, already validated (store.ValidateBranch)
}

// BranchHead resolves a branch to the commit it points at now:
// GET /repos/{owner}/{repo}/branches/{branch}. Catalog dispatch calls it for
// every tracking source, so the frozen workflow names a commit. The answer
// must name the requested branch and a full 40-hex commit; a redirect (a
// renamed branch) is refused like every redirect. A token GitHub refuses
// with 401 is dropped and the read is tried once more with a fresh one.
func (c *Client) BranchHead(ctx context.Context, r BranchRequest) (string, error) {
	for attempt := 0; ; attempt++ {
		token, err := c.tokens.Token(ctx, r.InstallationID, r.Repo)
		if err != nil {
			return "", err
		}
		sha, status, err := c.branchHead(ctx, r, token)
		if status == http.StatusUnauthorized && attempt == 0 {
			c.tokens.Invalidate(r.InstallationID, r.Repo, token)
			continue
		}
		return sha, err
	}
}

func (c *Client) branchHead(ctx context.Context, r BranchRequest, token string) (string, int, error) {
	if r.Branch == "" || strings.ContainsAny(r.Branch, "\x00\\") || strings.HasPrefix(r.Branch, "/") || strings.HasSuffix(r.Branch, "/") || strings.Contains(r.Branch, "//") {
		return "", 0, toolerr.New(toolerr.InvalidArguments, "the tracking branch is not a branch name")
	}
	// A branch name may hold '/': each component is its own escaped
	// segment, as GitHub's route expects.
	segments := append([]string{"repos", r.Owner, r.Repo, "branches"}, strings.Split(r.Branch, "/")...)
	req, err := c.up.NewRequest(ctx, http.MethodGet, nil, nil, segments...)
	if err != nil {
		return "", 0, transportError(err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	upstream.Credential{Token: token}.Apply(req)
	resp, err := c.up.Do(req)
	if err != nil {
		return "", 0, transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, c.branchStatusError(resp)
	}
	if !isJSON(resp.Header.Get("Content-Type")) {
		return "", resp.StatusCode, toolerr.New(toolerr.ProviderMalformed, "GitHub's branch answer is not JSON")
	}
	body, err := upstream.ReadBounded(resp.Body, maxBranchResponse)
	if err != nil {
		return "", resp.StatusCode, transportError(err)
	}
	sha, err := parseBranch(body, r.Branch)
	return sha, resp.StatusCode, err
}

// parseBranch reads {"name":…,"commit":{"sha":…},…}.
func parseBranch(body []byte, want string) (string, error) {
	var b struct {
		Name   *string `json:"name"`
		Commit *struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return "", toolerr.New(toolerr.ProviderMalformed, "GitHub's branch answer is malformed JSON")
	}
	if b.Name == nil || b.Commit == nil {
		return "", toolerr.New(toolerr.ProviderMalformed, "GitHub's branch answer lacks name or commit")
	}
	if *b.Name != want {
		return "", toolerr.New(toolerr.ProviderMalformed, "GitHub answered for another branch than the one asked for")
	}
	if !isCommitID(b.Commit.SHA) {
		return "", toolerr.New(toolerr.ProviderMalformed, "GitHub's branch answer does not name a full commit ID")
	}
	return b.Commit.SHA, nil
}

// isCommitID reports whether s is 40 lowercase hex characters.
func isCommitID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// branchStatusError maps a non-200 branch answer to its code; the body is
// never read into the error.
func (c *Client) branchStatusError(resp *http.Response) *toolerr.Error {
	status := resp.StatusCode
	if secs, ok := rateLimited(status, resp.Header, c.now()); ok {
		return rateLimitError(status, secs)
	}
	var e *toolerr.Error
	switch status {
	case http.StatusNotFound:
		e = toolerr.New(toolerr.ProviderNotFound, "GitHub has no such branch, or the installation cannot see the repository")
	case http.StatusUnauthorized:
		e = toolerr.New(toolerr.ProviderForbidden, "GitHub did not accept the installation token")
	case http.StatusForbidden:
		e = toolerr.New(toolerr.ProviderForbidden, "GitHub refused access to the branch")
	default:
		e = toolerr.New(toolerr.ProviderUnavailable, "GitHub answered with an unexpected status")
	}
	return e.With("native_status", status)
}
