package diffread

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// namePattern is what get_pull_request_diff accepts for owner and repo.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// Target names one pull request: owner/repo#index.
type Target struct {
	Owner string
	Repo  string
	Index int64
}

// String renders the target as owner/repo#index.
func (t Target) String() string { return fmt.Sprintf("%s/%s#%d", t.Owner, t.Repo, t.Index) }

// ParseTarget parses owner/repo#index, refusing what the tool would refuse
// (names outside ^[A-Za-z0-9_.-]{1,100}$, "." and "..", an index that is
// not a canonical positive integer), so that a typo fails before any call.
func ParseTarget(s string) (Target, error) {
	repoPart, index, ok := strings.Cut(s, "#")
	owner, repo, ok2 := strings.Cut(repoPart, "/")
	if !ok || !ok2 {
		return Target{}, fmt.Errorf("pull request %q: want owner/repo#index", s)
	}
	for _, n := range []string{owner, repo} {
		if !namePattern.MatchString(n) || n == "." || n == ".." {
			return Target{}, fmt.Errorf("pull request %q: %q is not a valid owner or repository name", s, n)
		}
	}
	i, err := strconv.ParseInt(index, 10, 64)
	if err != nil || i < 1 || strconv.FormatInt(i, 10) != index {
		return Target{}, fmt.Errorf("pull request %q: the index must be a positive integer", s)
	}
	return Target{Owner: owner, Repo: repo, Index: i}, nil
}
