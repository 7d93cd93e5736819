package githubemu

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
)

// MaxBlobBytes is the largest file whose content the Contents route
// includes: 1 MiB. Larger files answer encoding "none" (object media type)
// or 403 too_large (default media type), as GitHub does.
const MaxBlobBytes = 1 << 20

// objectMediaType is the Accept value that makes every answer an object.
const objectMediaType = "application/vnd.github.object"

// repoPath splits /repos/{owner}/{repo}/{kind}/{rest…} from the escaped
// request path, unescaping each segment on its own. It refuses empty, "."
// and ".." segments and segments that unescape to contain '/'.
func repoPath(r *http.Request, kind string) (owner, repo, rest string, ok bool) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if len(segs) < 5 || segs[0] != "repos" || segs[3] != kind {
		return "", "", "", false
	}
	var parts []string
	for i, s := range segs {
		if i == 0 || i == 3 {
			continue
		}
		u, err := url.PathUnescape(s)
		if err != nil || u == "" || u == "." || u == ".." || strings.Contains(u, "/") {
			return "", "", "", false
		}
		parts = append(parts, u)
	}
	return parts[0], parts[1], strings.Join(parts[2:], "/"), true
}

// resolveRef turns the ref query parameter (a commit ID or a branch name;
// default main) into a commit, or "".
func (e *Emulator) resolveRef(dir, ref string) string {
	if ref == "" {
		ref = "main"
	}
	if len(ref) == 40 && e.isCommit(dir, ref) {
		return ref
	}
	return e.branchHead(dir, ref)
}

// serveContents is GET /repos/{owner}/{repo}/contents/{path}?ref=….
func (e *Emulator) serveContents(w http.ResponseWriter, r *http.Request) {
	owner, repo, p, ok := repoPath(r, "contents")
	if !ok {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	if !e.authorize(w, r, owner, repo) {
		return
	}
	dir := e.repoDir(owner, repo)
	if _, err := os.Stat(dir); err != nil {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	ref := r.URL.Query().Get("ref")
	commit := e.resolveRef(dir, ref)
	if commit == "" {
		writeMessage(w, http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	en, err := e.entryAt(dir, commit, p)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Server Error")
		return
	}
	if en == nil {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	object := strings.Contains(r.Header.Get("Accept"), objectMediaType)
	c := contentsCtx{e: e, dir: dir, owner: owner, repo: repo, ref: commit}
	switch en.mode {
	case "040000":
		entries, err := e.lsTree(dir, en.oid)
		if err != nil {
			writeMessage(w, http.StatusInternalServerError, "Server Error")
			return
		}
		list := make([]map[string]any, 0, len(entries))
		for _, child := range entries {
			child.path = p + "/" + child.path
			list = append(list, c.listing(child))
		}
		if !object {
			writeJSON(w, http.StatusOK, list)
			return
		}
		o := c.base("dir", p, en.oid, 0)
		o["entries"] = list
		writeJSON(w, http.StatusOK, o)
	case "160000":
		o := c.base("submodule", p, en.oid, 0)
		o["submodule_git_url"] = "https://github.com/" + owner + "/" + path.Base(p) + ".git"
		writeJSON(w, http.StatusOK, o)
	case "120000":
		target, err := e.blob(dir, en.oid)
		if err != nil {
			writeMessage(w, http.StatusInternalServerError, "Server Error")
			return
		}
		// GitHub answers a symlink whose target is a regular file of the
		// repository with that file; any other symlink describes itself.
		if tp, inside := resolveLink(p, string(target)); inside {
			if ten, err := e.entryAt(dir, commit, tp); err == nil && ten != nil && (ten.mode == "100644" || ten.mode == "100755") {
				c.serveFile(w, *ten, object)
				return
			}
		}
		o := c.base("symlink", p, en.oid, en.size)
		o["target"] = string(target)
		writeJSON(w, http.StatusOK, o)
	default:
		c.serveFile(w, *en, object)
	}
}

// resolveLink resolves a symlink's target relative to the link's
// directory, and reports whether it stays inside the repository.
func resolveLink(linkPath, target string) (string, bool) {
	if strings.HasPrefix(target, "/") {
		return "", false
	}
	joined := path.Join(path.Dir(linkPath), target)
	if joined == "." || joined == ".." || strings.HasPrefix(joined, "../") {
		return "", false
	}
	return joined, true
}

// contentsCtx builds the objects of one Contents answer.
type contentsCtx struct {
	e                     *Emulator
	dir, owner, repo, ref string
}

// base is the members every Contents object has.
func (c contentsCtx) base(typ, p, sha string, size int64) map[string]any {
	if size < 0 {
		size = 0
	}
	api := c.e.origin + "/repos/" + c.owner + "/" + c.repo
	self := api + "/contents/" + escapePath(p) + "?ref=" + c.ref
	html := "https://github.com/" + c.owner + "/" + c.repo + "/blob/" + c.ref + "/" + escapePath(p)
	o := map[string]any{
		"type": typ, "size": size, "name": path.Base(p), "path": p, "sha": sha,
		"url": self, "git_url": api + "/git/blobs/" + sha, "html_url": html, "download_url": nil,
		"_links": map[string]any{"self": self, "git": api + "/git/blobs/" + sha, "html": html},
	}
	if typ == "file" {
		o["download_url"] = "https://raw.githubusercontent.com/" + c.owner + "/" + c.repo + "/" + c.ref + "/" + escapePath(p)
	}
	return o
}

// listing is one entry of a directory listing. GitHub reports submodules
// in listings as type "file".
func (c contentsCtx) listing(en treeEntry) map[string]any {
	typ := map[string]string{"040000": "dir", "120000": "symlink", "160000": "file"}[en.mode]
	if typ == "" {
		typ = "file"
	}
	return c.base(typ, en.path, en.oid, en.size)
}

// serveFile answers a regular file: base64 content in 60-character lines,
// or, over MaxBlobBytes, encoding "none" (object media type) or 403
// too_large (default media type).
func (c contentsCtx) serveFile(w http.ResponseWriter, en treeEntry, object bool) {
	o := c.base("file", en.path, en.oid, en.size)
	if en.size > MaxBlobBytes {
		if !object {
			writeJSON(w, http.StatusForbidden, map[string]any{
				"message":           "This API returns blobs up to 1 MB in size. The requested blob is too large to fetch via the API, but you can use the Git Data API to request blobs up to 100 MB in size.",
				"errors":            []map[string]string{{"resource": "Blob", "field": "data", "code": "too_large"}},
				"documentation_url": "https://docs.github.com/rest/repos/contents#get-repository-content",
				"status":            "403",
			})
			return
		}
		o["encoding"], o["content"] = "none", ""
		writeJSON(w, http.StatusOK, o)
		return
	}
	lines, err := c.e.blobLines(c.dir, en.oid)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Server Error")
		return
	}
	o["encoding"], o["content"] = "base64", lines
	writeJSON(w, http.StatusOK, o)
}

// Base64Lines is GitHub's rendering of file content: standard base64 with a
// "\n" after every 60 characters and at the end.
func Base64Lines(content []byte) string {
	enc := base64.StdEncoding.EncodeToString(content)
	var b strings.Builder
	b.Grow(len(enc) + len(enc)/60 + 1)
	for len(enc) > 60 {
		b.WriteString(enc[:60])
		b.WriteByte('\n')
		enc = enc[60:]
	}
	if enc != "" {
		b.WriteString(enc)
		b.WriteByte('\n')
	}
	return b.String()
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// serveBranch is GET /repos/{owner}/{repo}/branches/{branch}.
func (e *Emulator) serveBranch(w http.ResponseWriter, r *http.Request) {
	owner, repo, branch, ok := repoPath(r, "branches")
	if !ok {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	if !e.authorize(w, r, owner, repo) {
		return
	}
	dir := e.repoDir(owner, repo)
	head := ""
	if _, err := os.Stat(dir); err == nil {
		head = e.branchHead(dir, branch)
	}
	if head == "" {
		writeMessage(w, http.StatusNotFound, "Branch not found")
		return
	}
	api := e.origin + "/repos/" + owner + "/" + repo
	writeJSON(w, http.StatusOK, map[string]any{
		"name":      branch,
		"commit":    map[string]any{"sha": head, "url": api + "/commits/" + head},
		"protected": false,
		"_links":    map[string]any{"self": api + "/branches/" + escapePath(branch)},
	})
}
