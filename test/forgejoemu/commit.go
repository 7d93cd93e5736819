package forgejoemu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// commitEpoch is the date of a repository's first commit; each later commit
// made through Commit is one minute later, so object IDs are reproducible.
var commitEpoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// Identity of every commit made through Commit.
const (
	commitName  = "Forgejo Emulator"
	commitEmail = "emulator@forgejo.invalid"
)

// Commit makes a commit on branch whose parent is the branch's tip (a root
// commit if the branch does not exist yet), with the tip's tree plus files
// (written as regular 0644 blobs, content as is) minus deletes, and moves the
// branch to it. It uses plumbing only (hash-object, a temporary index,
// update-index -z --index-info, write-tree, commit-tree, update-ref), so any
// path bytes git accepts work. A rename is a delete plus a file with the same
// content. Dates are fixed per repository, so equal inputs give equal OIDs.
func (r *Repo) Commit(branch string, files map[string][]byte, deletes []string, message string) (string, error) {
	if err := checkBranchName(branch); err != nil {
		return "", err
	}
	for p := range files {
		if err := checkPath(p); err != nil {
			return "", err
		}
	}
	for _, p := range deletes {
		if err := checkPath(p); err != nil {
			return "", err
		}
	}
	ctx := context.Background()
	r.gitMu.Lock()
	defer r.gitMu.Unlock()

	parent, err := r.resolve(ctx, "refs/heads/"+branch)
	if err != nil {
		return "", err
	}
	index, err := os.CreateTemp(filepath.Join(r.e.dir, ".tmp"), "index-*")
	if err != nil {
		return "", err
	}
	indexPath := index.Name()
	_ = index.Close()
	_ = os.Remove(indexPath) // git wants to create it itself
	defer os.Remove(indexPath)
	env := []string{"GIT_INDEX_FILE=" + indexPath}

	if parent != "" {
		if _, err := r.e.run(ctx, gitCmd{dir: r.gitDir, env: env, args: []string{"read-tree", parent}}); err != nil {
			return "", err
		}
	}
	var info bytes.Buffer
	zero := strings.Repeat("0", oidLength(r.objectFormat))
	for _, p := range deletes {
		fmt.Fprintf(&info, "0 %s\t%s\x00", zero, p)
	}
	if len(files) > 0 {
		if err := r.hashFiles(ctx, files, &info); err != nil {
			return "", err
		}
	}
	if info.Len() > 0 {
		if _, err := r.e.run(ctx, gitCmd{dir: r.gitDir, env: env, args: []string{"update-index", "-z", "--replace", "--index-info"}, stdin: &info}); err != nil {
			return "", err
		}
	}
	out, err := r.e.run(ctx, gitCmd{dir: r.gitDir, env: env, args: []string{"write-tree"}})
	if err != nil {
		return "", err
	}
	tree := strings.TrimSpace(string(out))

	r.commitSeq++
	date := fmt.Sprintf("%d +0000", commitEpoch.Add(time.Duration(r.commitSeq-1)*time.Minute).Unix())
	args := []string{"commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	args = append(args, "-F", "-")
	env = append(env,
		"GIT_AUTHOR_NAME="+commitName, "GIT_AUTHOR_EMAIL="+commitEmail, "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME="+commitName, "GIT_COMMITTER_EMAIL="+commitEmail, "GIT_COMMITTER_DATE="+date)
	out, err = r.e.run(ctx, gitCmd{dir: r.gitDir, env: env, args: args, stdin: strings.NewReader(message)})
	if err != nil {
		return "", err
	}
	oid := strings.TrimSpace(string(out))
	if err := r.updateRef(ctx, "refs/heads/"+branch, oid, parent); err != nil {
		return "", err
	}
	r.touch()
	return oid, nil
}

// hashFiles writes the files as blobs with one hash-object --stdin-paths
// (their contents go through temporary files named in ASCII, so the real
// paths never reach git's command line) and appends their index-info lines.
func (r *Repo) hashFiles(ctx context.Context, files map[string][]byte, info *bytes.Buffer) error {
	tmp, err := os.MkdirTemp(filepath.Join(r.e.dir, ".tmp"), "blobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var list bytes.Buffer
	for i, p := range paths {
		name := filepath.Join(tmp, strconv.Itoa(i))
		if err := os.WriteFile(name, files[p], 0o600); err != nil {
			return err
		}
		list.WriteString(name + "\n")
	}
	out, err := r.e.run(ctx, gitCmd{dir: r.gitDir, args: []string{"hash-object", "-w", "--no-filters", "--stdin-paths"}, stdin: &list})
	if err != nil {
		return err
	}
	oids := strings.Fields(string(out))
	if len(oids) != len(paths) {
		return fmt.Errorf("forgejoemu: hash-object returned %d ids for %d files", len(oids), len(paths))
	}
	for i, p := range paths {
		fmt.Fprintf(info, "100644 %s\t%s\x00", oids[i], p)
	}
	return nil
}

// checkPath refuses paths that cannot be index entries: empty, absolute,
// with empty, "." or ".." components, or with NUL. Git refuses the rest.
func checkPath(p string) error {
	if p == "" || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
		return fmt.Errorf("%w: path %q", ErrInvalid, p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%w: path %q", ErrInvalid, p)
		}
	}
	return nil
}

// oidLength is the hex length of an object ID.
func oidLength(objectFormat string) int {
	if objectFormat == "sha256" {
		return 64
	}
	return 40
}

// Branch creates newBranch at the tip of the existing branch from.
func (r *Repo) Branch(newBranch, from string) error {
	if err := checkBranchName(newBranch); err != nil {
		return err
	}
	tip, err := r.Tip(from)
	if err != nil {
		return err
	}
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	if err := r.updateRef(context.Background(), "refs/heads/"+newBranch, tip, ""); err != nil {
		return fmt.Errorf("%w: branch %q: %w", ErrExists, newBranch, err)
	}
	r.touch()
	return nil
}

// DeleteBranch deletes a branch, e.g. a pull request's head branch after a
// merge; the pull request then reports its head from refs/pull/<index>/head.
func (r *Repo) DeleteBranch(name string) error {
	tip, err := r.Tip(name)
	if err != nil {
		return err
	}
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	_, err = r.e.run(context.Background(), gitCmd{dir: r.gitDir, args: []string{"update-ref", "-d", "refs/heads/" + name, tip}})
	return err
}

// touch records a push: the repository is no longer empty and was updated.
func (r *Repo) touch() {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	r.empty = false
	r.updated = r.e.nowLocked()
}
