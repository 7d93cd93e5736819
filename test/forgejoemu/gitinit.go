package forgejoemu

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// initBare creates a bare repository with the given object format and HEAD.
// git init runs once per object format per emulator, into a template that
// is then copied: starting a git process is the slow part of the emulator,
// and many tests create dozens of repositories.
func (e *Emulator) initBare(gitDir, objectFormat, defaultBranch string) error {
	tpl, err := e.bareTemplate(objectFormat)
	if err != nil {
		return err
	}
	err = filepath.WalkDir(tpl, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tpl, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(gitDir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return err
	}
	// What git init --initial-branch writes.
	return os.WriteFile(filepath.Join(gitDir, "HEAD"), []byte("ref: refs/heads/"+defaultBranch+"\n"), 0o644)
}

// bareTemplate returns a directory made by git init --bare for the format.
func (e *Emulator) bareTemplate(objectFormat string) (string, error) {
	e.tplMu.Lock()
	defer e.tplMu.Unlock()
	dir := filepath.Join(e.dir, ".tmp", "template-"+objectFormat)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return dir, nil
	}
	_, err := e.run(context.Background(), gitCmd{dir: dir, args: []string{
		"init", "--quiet", "--bare", "--template=", "--object-format=" + objectFormat, dir,
	}})
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// checkBranchName refuses what git check-ref-format refuses for
// refs/heads/<name> (checked here, without a process), and NUL. Other bytes,
// including non-UTF-8 ones, are fine, as in git.
func checkBranchName(name string) error {
	if !validRefName("refs/heads/" + name) {
		return fmt.Errorf("%w: branch name %q", ErrInvalid, name)
	}
	return nil
}

// validRefName implements git-check-ref-format's rules.
func validRefName(ref string) bool {
	if ref == "@" || strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "@{") || strings.Contains(ref, "//") {
		return false
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for _, comp := range strings.Split(ref, "/") {
		if comp == "" || strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}
