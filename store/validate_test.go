package store_test

import (
	"context"
	"errors"
	"os/exec"
	"path"
	"strings"
	"testing"
	"unicode"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

func TestValidateCommitSHA(t *testing.T) {
	for _, tc := range []struct {
		sha string
		ok  bool
	}{
		{"0123456789abcdef0123456789abcdef01234567", true},
		{"0123456789ABCDEF0123456789abcdef01234567", false},
		{"0123456789abcdef0123456789abcdef0123456", false},
		{"0123456789abcdef0123456789abcdef012345678", false},
		{"0123456789abcdef0123456789abcdef0123456g", false},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", false}, // sha256
		{"", false},
		{"main", false},
		{" 123456789abcdef0123456789abcdef01234567", false},
	} {
		t.Run(tc.sha, func(t *testing.T) {
			checkValid(t, store.ValidateCommitSHA(tc.sha), tc.ok, "commit_sha")
		})
	}
}

func TestValidateDocumentPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"README.md", true},
		{"docs/CONTINUITY_PROTOCOL.md", true},
		{"docs/agents/core.md", true},
		{".github/workflows/ci.yml", true},
		{"dir with space/ünïcode.md", true},
		{"a/...b/c", true}, // "..." is an ordinary name
		{"", false},
		{"/etc/passwd", false},
		{"docs/", false},
		{"docs//x.md", false},
		{"./docs/x.md", false},
		{"docs/./x.md", false},
		{"../x.md", false},
		{"docs/../x.md", false},
		{"docs/..", false},
		{".", false},
		{"..", false},
		{`docs\x.md`, false},
		{"docs/\x00x.md", false},
		{"docs/\xffx.md", false},
		{strings.Repeat("a/", 2048) + "x", false},
		// Hostile names an operator might paste: line breaks, a terminal
		// escape, DEL, a C1 control, bidirectional overrides.
		{"docs/a\r\nb.md", false},
		{"docs/a\nb.md", false},
		{"docs/\x1b[31mred.md", false},
		{"docs/a\x7fb.md", false},
		{"docs/a\u0085b.md", false},
		{"docs/\u202egnp.md", false},
		{"docs/\u2066x\u2069.md", false},
		// Look-alikes and percent signs are ordinary characters of a file
		// name: they name a file of that name (escaped when requested).
		{"docs／x.md", true},
		{"docs∕x.md", true},
		{"docs/%2e%2e/x.md", true},
		{"docs%2Fx.md", true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			checkValid(t, store.ValidateDocumentPath(tc.path), tc.ok, "path")
		})
	}
}

// branchCases are names with the verdict of `git check-ref-format --branch`
// (gitOK) and ours (ok); ours refuses more than git, never less.
var branchCases = []struct {
	name  string
	gitOK bool
	ok    bool
}{
	{"main", true, true},
	{"feature/x", true, true},
	{"release-1.2", true, true},
	{"user/ünïcode", true, true},
	{"a.b/c_d", true, true},
	{"v1.0", true, true},
	{"foo@bar", true, true},
	{"refs/tags/v1", true, false},    // a tag selector
	{"refs/heads/main", true, false}, // a full ref, not a branch name
	{"HEAD", false, false},
	{"-dash", false, false},
	{"", false, false},
	{"a..b", false, false},
	{".hidden", false, false},
	{"dir/.hidden", false, false},
	{"x.lock", false, false},
	{"dir/x.lock/y", false, false},
	{"trailing.", false, false},
	{"trailing/", false, false},
	{"/leading", false, false},
	{"double//slash", false, false},
	{"with space", false, false},
	{"tilde~1", false, false},
	{"caret^", false, false},
	{"colon:x", false, false},
	{"question?", false, false},
	{"star*", false, false},
	{"bracket[", false, false},
	{`back\slash`, false, false},
	{"at@{1}", false, false},
	{"@", true, false}, // git reads "@" as HEAD; never a branch here
	{"ctl\x01", false, false},
	{"del\x7f", false, false},
	{"tab\tx", false, false},
}

func TestValidateBranch(t *testing.T) {
	for _, tc := range branchCases {
		t.Run(tc.name, func(t *testing.T) {
			checkValid(t, store.ValidateBranch(tc.name), tc.ok, "tracking_ref")
		})
	}
	t.Run("over 255 bytes", func(t *testing.T) {
		checkValid(t, store.ValidateBranch(strings.Repeat("b", 256)), false, "tracking_ref")
	})
}

// TestValidateBranchAgainstGit checks the table's git column against the real
// git, so the rules above are git's and not a guess.
func TestValidateBranchAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, tc := range branchCases {
		if tc.name == "" || strings.HasPrefix(tc.name, "-") {
			continue // git reads these as usage errors, not verdicts
		}
		err := exec.Command("git", "check-ref-format", "--branch", tc.name).Run()
		if (err == nil) != tc.gitOK {
			t.Errorf("git check-ref-format --branch %q: ok=%v, table says %v", tc.name, err == nil, tc.gitOK)
		}
		if tc.ok && !tc.gitOK {
			t.Errorf("%q: we accept what git refuses", tc.name)
		}
	}
}

func TestValidateRoleAndGitHubNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"role runtime", store.ValidateRole("runtime"), true},
		{"role with digits", store.ValidateRole("role-2_x"), true},
		{"role empty", store.ValidateRole(""), false},
		{"role uppercase", store.ValidateRole("Runtime"), false},
		{"role digit first", store.ValidateRole("2x"), false},
		{"role space", store.ValidateRole("a b"), false},
		{"owner", store.ValidateGitHubOwner("h8v6"), true},
		{"owner hyphen", store.ValidateGitHubOwner("my-org"), true},
		{"owner leading hyphen", store.ValidateGitHubOwner("-org"), false},
		{"owner slash", store.ValidateGitHubOwner("a/b"), false},
		{"owner dot", store.ValidateGitHubOwner("a.b"), false},
		{"repo", store.ValidateGitHubRepositoryName("heyaira"), true},
		{"repo dots", store.ValidateGitHubRepositoryName(".github"), true},
		{"repo dotdot", store.ValidateGitHubRepositoryName(".."), false},
		{"repo slash", store.ValidateGitHubRepositoryName("a/b"), false},
		{"repo empty", store.ValidateGitHubRepositoryName(""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.err == nil) != tc.ok {
				t.Errorf("error = %v, want ok=%v", tc.err, tc.ok)
			}
			if tc.err != nil && !errors.Is(tc.err, store.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", tc.err)
			}
		})
	}
}

func checkValid(t *testing.T, err error, ok bool, field string) {
	t.Helper()
	if (err == nil) != ok {
		t.Fatalf("error = %v, want ok=%v", err, ok)
	}
	if err != nil {
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("error %v does not wrap ErrInvalid", err)
		}
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("error %q does not name the field %s", err, field)
		}
	}
}

// FuzzValidateDocumentPath checks that every accepted path is a clean,
// relative path that cannot climb out of the repository root.
func FuzzValidateDocumentPath(f *testing.F) {
	for _, s := range []string{"README.md", "docs/a.md", "../x", "a//b", "/abs", `a\b`, "a/./b", "a/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if store.ValidateDocumentPath(p) != nil {
			return
		}
		if path.Clean(p) != p || path.IsAbs(p) || p == "." || strings.HasPrefix(p, "../") || p == ".." ||
			strings.ContainsAny(p, "\\\x00") || strings.IndexFunc(p, unicode.IsControl) >= 0 {
			t.Errorf("accepted unsafe path %q", p)
		}
	})
}

// FuzzValidateBranch checks that every accepted branch name keeps git's
// structural rules and is no full ref.
func FuzzValidateBranch(f *testing.F) {
	for _, tc := range branchCases {
		f.Add(tc.name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if store.ValidateBranch(name) != nil {
			return
		}
		if strings.HasPrefix(name, "refs/") || strings.Contains(name, "..") || strings.Contains(name, "@{") ||
			strings.ContainsAny(name, " ~^:?*[\\") || strings.HasSuffix(name, ".lock") || strings.HasPrefix(name, ".") {
			t.Errorf("accepted invalid branch %q", name)
		}
	})
}

// TestRefusedInputIsAnswered: an identifier a caller sent that the
// database cannot hold — bytes that are not UTF-8, a NUL — is the store
// answering (Answered), not the store failing: PostgreSQL refuses it with
// a data exception, and counted as a failure it would let anyone open the
// store's circuit breaker, making the store look down to every caller.
func TestRefusedInputIsAnswered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		for _, id := range []string{"\xff", "cli_\x00"} {
			if _, err := s.GetClient(ctx, id); err == nil || !store.Answered(err) {
				t.Fatalf("client %q: %v, want an answer of the store", id, err)
			}
			if _, err := s.GetToken(ctx, id); err == nil || !store.Answered(err) {
				t.Fatalf("token %q: %v, want an answer of the store", id, err)
			}
		}
	})
	if store.Answered(errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")) {
		t.Fatal("a refused connection is answered")
	}
}
