package githubemu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Mode is the git mode of a tree entry.
type Mode int

// The entry modes a repository can hold.
const (
	// ModeFile is a regular file (100644).
	ModeFile Mode = iota
	// ModeExecutable is an executable regular file (100755).
	ModeExecutable
	// ModeSymlink is a symbolic link (120000) whose target is Entry.Content.
	ModeSymlink
	// ModeGitlink is a submodule (160000) at commit Entry.Commit.
	ModeGitlink
)

func (m Mode) git() string {
	return [...]string{"100644", "100755", "120000", "160000"}[m]
}

// Entry is one path of a commit.
type Entry struct {
	Path    string
	Mode    Mode
	Content []byte // file content, or the symlink target
	Commit  string // the gitlink's commit (ModeGitlink)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// repoDir is the bare repository of owner/name; GitHub names are
// case-insensitive, so the directory name is lowercased.
func (e *Emulator) repoDir(owner, name string) string {
	return filepath.Join(e.dir, strings.ToLower(owner), strings.ToLower(name)+".git")
}

// CreateRepository creates an empty bare repository owner/name.
func (e *Emulator) CreateRepository(owner, name string) error {
	if !nameRE.MatchString(owner) || !nameRE.MatchString(name) {
		return fmt.Errorf("githubemu: bad repository name %q/%q", owner, name)
	}
	dir := e.repoDir(owner, name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("githubemu: repository %s/%s exists", owner, name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_, err := e.git(dir, nil, nil, "init", "--quiet", "--bare", "--initial-branch=main", dir)
	return err
}

// commitDate is the fixed time of every commit, so object IDs are
// deterministic; each commit on a branch is one second after its parent.
var commitDate = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Commit writes a commit whose tree holds exactly entries on top of the
// branch's current head (if any), moves the branch to it and returns its
// ID.
func (e *Emulator) Commit(owner, name, branch, message string, entries []Entry) (string, error) {
	dir := e.repoDir(owner, name)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("githubemu: no repository %s/%s", owner, name)
	}
	index, err := os.CreateTemp(e.home, "index-")
	if err != nil {
		return "", err
	}
	index.Close()
	os.Remove(index.Name()) // git wants to create it
	defer os.Remove(index.Name())
	idxEnv := []string{"GIT_INDEX_FILE=" + index.Name()}

	var info bytes.Buffer
	for _, en := range entries {
		oid := en.Commit
		if en.Mode != ModeGitlink {
			out, err := e.git(dir, bytes.NewReader(en.Content), nil, "hash-object", "-w", "--stdin")
			if err != nil {
				return "", err
			}
			oid = strings.TrimSpace(string(out))
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", en.Mode.git(), oid, en.Path)
	}
	if _, err := e.git(dir, &info, idxEnv, "update-index", "-z", "--add", "--index-info"); err != nil {
		return "", err
	}
	out, err := e.git(dir, nil, idxEnv, "write-tree")
	if err != nil {
		return "", err
	}
	tree := strings.TrimSpace(string(out))
	args := []string{"commit-tree", tree, "-m", message}
	parent := e.branchHead(dir, branch)
	n := 0
	if parent != "" {
		args = append(args, "-p", parent)
		if cnt, err := e.git(dir, nil, nil, "rev-list", "--count", parent); err == nil {
			fmt.Sscan(string(cnt), &n)
		}
	}
	date := commitDate.Add(time.Duration(n) * time.Second).Format(time.RFC3339)
	out, err = e.git(dir, nil, []string{
		"GIT_AUTHOR_NAME=githubemu", "GIT_AUTHOR_EMAIL=emu@example.invalid", "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=githubemu", "GIT_COMMITTER_EMAIL=emu@example.invalid", "GIT_COMMITTER_DATE=" + date,
	}, args...)
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(string(out))
	if _, err := e.git(dir, nil, nil, "update-ref", "refs/heads/"+branch, commit); err != nil {
		return "", err
	}
	return commit, nil
}
