package github

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
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
	if r.Branch == "" || strings.ContainsAny(r.Branch, "\x00\\") || strings.HasPrefix(r.Branch, "/") || strings.HasSuffix(r.Branch, "/") || strings.Contains(r.Branch, "//") {
		return "", toolerr.New(toolerr.InvalidArguments, "the tracking branch is not a branch name")
	}
	// A branch name may hold '/': each component is its own escaped
	// segment, as GitHub's route expects.
	return withToken(ctx, c, r.InstallationID, r.Repo, func(ctx context.Context, token string) (string, error) {
		x := apiExchange(token, "application/vnd.github+json", nil, maxBranchResponse, routeBranch, r.Owner, r.Repo, r.Branch)
		x.Check = checkStrict
		a, err := c.up.Exchange(ctx, x)
		if err != nil {
			return "", answerError(err, "branch", branchStatus, c.now())
		}
		return parseBranch(a.Body, r.Branch)
	})
}

// branchStatus is the branch route's table.
var branchStatus = statusTable{
	http.StatusNotFound:     {toolerr.ProviderNotFound, "GitHub has no such branch, or the installation cannot see the repository"},
	http.StatusUnauthorized: {toolerr.ProviderForbidden, "GitHub did not accept the installation token"},
	http.StatusForbidden:    {toolerr.ProviderForbidden, "GitHub refused access to the branch"},
}

// parseBranch reads {"name":…,"commit":{"sha":…},…}, which the exchange's
// checkStrict already held to one reading (no repeated or case-folded
// member at any depth: {"commit":{"sha":A},"commit":{"sha":B}} would
// otherwise resolve to B for encoding/json and to A for another reader).
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
