package githubemu

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// gitTimeout bounds one git command.
const gitTimeout = 2 * time.Minute

// gitEnv is the whole environment of every git command: no system, global
// or user configuration, a C locale and UTC, and literal pathspecs (so '*'
// or '?' in a path is a character, not a glob).
func (e *Emulator) gitEnv(gitDir string, extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.home,
		"GIT_DIR=" + gitDir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_LITERAL_PATHSPECS=1",
		"LC_ALL=C",
		"TZ=UTC",
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=core.fsync",
		"GIT_CONFIG_VALUE_0=none",
	}
	return append(env, extra...)
}

// git runs one git command in gitDir and returns its stdout; a failure
// carries git's stderr.
func (e *Emulator) git(gitDir string, stdin io.Reader, extraEnv []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = e.gitEnv(gitDir, extraEnv...)
	cmd.Dir = e.home
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("githubemu: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// treeEntry is one line of git ls-tree -l.
type treeEntry struct {
	mode string // "100644", "100755", "120000", "160000", "040000"
	typ  string // "blob", "tree", "commit"
	oid  string
	size int64 // -1 for trees and gitlinks
	path string
}

// lsTree runs git ls-tree -z -l and parses its entries.
func (e *Emulator) lsTree(gitDir string, args ...string) ([]treeEntry, error) {
	out, err := e.git(gitDir, nil, nil, append([]string{"ls-tree", "-z", "-l"}, args...)...)
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		fields := strings.Fields(string(meta))
		if !ok || len(fields) != 4 {
			return nil, fmt.Errorf("githubemu: unexpected ls-tree line %q", rec)
		}
		size := int64(-1)
		if fields[3] != "-" {
			if size, err = strconv.ParseInt(fields[3], 10, 64); err != nil {
				return nil, fmt.Errorf("githubemu: unexpected ls-tree size %q", fields[3])
			}
		}
		entries = append(entries, treeEntry{mode: fields[0], typ: fields[1], oid: fields[2], size: size, path: string(path)})
	}
	return entries, nil
}

// entryAt returns the tree entry at path in commit (a commit ID), or nil
// when absent.
func (e *Emulator) entryAt(gitDir, commit, path string) (*treeEntry, error) {
	en, err := cached(&e.objects, &e.objects.entries, cacheKey(gitDir, commit, path), func() (*treeEntry, error) {
		entries, err := e.lsTree(gitDir, commit, "--", path)
		if err != nil {
			return nil, err
		}
		for _, en := range entries {
			if en.path == path {
				return &en, nil
			}
		}
		return nil, nil
	}, always)
	if en == nil {
		return nil, err
	}
	c := *en // the caller may change its copy
	return &c, err
}

// blob returns a blob's content; the caller must not change it.
func (e *Emulator) blob(gitDir, oid string) ([]byte, error) {
	return cached(&e.objects, &e.objects.blobs, cacheKey(gitDir, oid), func() ([]byte, error) {
		return e.git(gitDir, nil, nil, "cat-file", "blob", oid)
	}, always)
}

// blobLines returns Base64Lines of a blob's content.
func (e *Emulator) blobLines(gitDir, oid string) (string, error) {
	return cached(&e.objects, &e.objects.lines, cacheKey(gitDir, oid), func() (string, error) {
		content, err := e.blob(gitDir, oid)
		return Base64Lines(content), err
	}, always)
}

// isCommit reports whether sha names a commit of the repository.
func (e *Emulator) isCommit(gitDir, sha string) bool {
	ok, _ := cached(&e.objects, &e.objects.commits, cacheKey(gitDir, sha), func() (bool, error) {
		out, err := e.git(gitDir, nil, nil, "cat-file", "-t", sha)
		return err == nil && strings.TrimSpace(string(out)) == "commit", nil
	}, func(found bool) bool { return found })
	return ok
}

// branchHead returns the commit a branch points at, or "".
func (e *Emulator) branchHead(gitDir, branch string) string {
	out, err := e.git(gitDir, nil, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
