package forgejoemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// gitTimeout bounds one git command run by the emulator.
const gitTimeout = 2 * time.Minute

// gitEnv is the whole environment of every git command: no system, global
// or user configuration, a C locale and UTC, so output is reproducible.
func (e *Emulator) gitEnv(gitDir string, extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.home,
		"GIT_DIR=" + gitDir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		"TZ=UTC",
		// A test double needs no durability; fsync is slow on some disks.
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=core.fsync",
		"GIT_CONFIG_VALUE_0=none",
	}
	return append(env, extra...)
}

// gitCmd describes one git invocation.
type gitCmd struct {
	dir    string // GIT_DIR
	args   []string
	env    []string // extra variables
	stdin  io.Reader
	stdout io.Writer // nil: captured and returned
}

// run runs git and returns its stdout (when not streamed). A failure carries
// git's stderr.
func (e *Emulator) run(ctx context.Context, c gitCmd) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", c.args...)
	cmd.Env = e.gitEnv(c.dir, c.env...)
	cmd.Dir = e.home
	cmd.Stdin = c.stdin
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &GitError{Args: c.args, Err: err, Stderr: strings.TrimSpace(errb.String())}
	}
	return out.Bytes(), nil
}

// GitError is a failed git command run by the emulator.
type GitError struct {
	Args   []string
	Err    error
	Stderr string
}

// Error renders the command, its error and its stderr.
func (g *GitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(g.Args, " "), g.Err, g.Stderr)
}

// Unwrap returns the process error.
func (g *GitError) Unwrap() error { return g.Err }

// exitCode returns git's exit status, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Git runs git with the emulator's environment against this repository and
// returns its standard output; tests use it to check results against git itself.
func (r *Repo) Git(args ...string) ([]byte, error) {
	return r.e.run(context.Background(), gitCmd{dir: r.gitDir, args: args})
}

// DiffBinary writes what Forgejo's GetDiffBinary writes for base..head:
// git diff -p --binary --histogram base head.
func (r *Repo) DiffBinary(ctx context.Context, w io.Writer, base, head string) error {
	_, err := r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"diff", "-p", "--binary", "--histogram", base, head}, stdout: w})
	return err
}

// resolve returns the commit a ref or OID names, or "" if there is none.
func (r *Repo) resolve(ctx context.Context, rev string) (string, error) {
	out, err := r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"}})
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Tip returns the commit at the tip of a branch, or ErrNotFound.
func (r *Repo) Tip(branch string) (string, error) {
	oid, err := r.resolve(context.Background(), "refs/heads/"+branch)
	if err != nil {
		return "", err
	}
	if oid == "" {
		return "", fmt.Errorf("%w: branch %q of %s", ErrNotFound, branch, r.FullName())
	}
	return oid, nil
}

// refs returns every branch and pull ref with its object, from one for-each-ref.
func (r *Repo) refs(ctx context.Context) (map[string]string, error) {
	out, err := r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/pull/"}})
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if oid, name, ok := strings.Cut(line, " "); ok {
			refs[name] = oid
		}
	}
	return refs, nil
}

// tips returns the tips of two branches from one for-each-ref.
func (r *Repo) tips(ctx context.Context, head, base string) (string, string, error) {
	refs, err := r.refs(ctx)
	if err != nil {
		return "", "", err
	}
	h, b := refs["refs/heads/"+head], refs["refs/heads/"+base]
	if h == "" || b == "" {
		return "", "", fmt.Errorf("%w: branch %q or %q of %s", ErrNotFound, head, base, r.FullName())
	}
	return h, b, nil
}

// mergeBase is Forgejo's TestPatch merge base: git merge-base of base and
// head, or the base commit itself when they share no history.
// Commits are immutable, so results are memoized by (repository, base, head).
func (r *Repo) mergeBase(ctx context.Context, base, head string) (string, error) {
	key := strconv.FormatInt(r.id, 10) + " " + base + " " + head
	r.e.mu.Lock()
	mb, ok := r.e.st.mergeBases[key]
	r.e.mu.Unlock()
	if ok {
		return mb, nil
	}
	out, err := r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"merge-base", "--", base, head}})
	switch {
	case err == nil:
		mb = strings.TrimSpace(string(out))
	case exitCode(err) == 1:
		mb = base
	default:
		return "", err
	}
	r.e.mu.Lock()
	r.e.st.mergeBases[key] = mb
	r.e.mu.Unlock()
	return mb, nil
}

// updateRef moves ref to newOID if it still points at oldOID ("" = must not
// exist), so concurrent writers cannot silently lose a commit.
func (r *Repo) updateRef(ctx context.Context, ref, newOID, oldOID string) error {
	_, err := r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"update-ref", ref, newOID, oldOID}})
	return err
}

// diffStat is the --shortstat of a pull request's diff.
type diffStat struct{ files, additions, deletions int }

// shortStat is Forgejo's GetDiffShortStat(mergeBase, head), cached by
// (repository, merge base, head): the same commits have the same stat.
func (r *Repo) shortStat(ctx context.Context, base, head string) diffStat {
	key := strconv.FormatInt(r.id, 10) + " " + base + " " + head
	r.e.mu.Lock()
	s, ok := r.e.st.stats[key]
	r.e.mu.Unlock()
	if ok || base == "" || head == "" {
		return s
	}
	out, err := r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"diff", "--shortstat", base + "..." + head}})
	if err != nil {
		out, err = r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"diff", "--shortstat", base, head}})
	}
	if err != nil {
		return s
	}
	s = parseShortStat(string(out))
	r.e.mu.Lock()
	r.e.st.stats[key] = s
	r.e.mu.Unlock()
	return s
}

// parseShortStat reads " 3 files changed, 10 insertions(+), 2 deletions(-)".
func parseShortStat(line string) diffStat {
	var s diffStat
	for _, part := range strings.Split(strings.TrimSpace(line), ",") {
		fields := strings.Fields(part)
		if len(fields) < 2 {
			continue
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(fields[1], "file"):
			s.files = n
		case strings.HasPrefix(fields[1], "insertion"):
			s.additions = n
		case strings.HasPrefix(fields[1], "deletion"):
			s.deletions = n
		}
	}
	return s
}
