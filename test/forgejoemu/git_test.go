package forgejoemu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitOut runs git in the repository and fails the test on error.
func gitOut(t *testing.T, r *Repo, args ...string) string {
	t.Helper()
	out, err := r.Git(args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// binaryBlob has NUL bytes and every byte value, so git treats it as binary.
func binaryBlob(seed byte) []byte {
	b := []byte{0, seed, 0xff, 0xfe, 0}
	for i := 0; i < 512; i++ {
		b = append(b, byte(i)^seed)
	}
	return b
}

// newRepo creates a repository, skipping the test when git cannot make the
// object format (sha256 needs git 2.29 or later).
func newRepo(t *testing.T, e *Emulator, owner, name, format string) *Repo {
	t.Helper()
	r, err := e.CreateRepo(owner, name, RepoOptions{ObjectFormat: format})
	if err != nil && format == "sha256" {
		t.Skipf("this git cannot create sha256 repositories (%v); skipping the sha256 case", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPullRequestGitInputs builds a pull request with a binary file, a
// non-UTF-8 path, a rename and a deletion, in both object formats, and checks
// everything against git itself: the tree, the merge base, refs/pull/N/head,
// and that git diff --binary of merge base..refs/pull/N/head reproduces the
// head tree byte for byte when applied to the merge base.
func TestPullRequestGitInputs(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t)
			r := newRepo(t, e, "team", "project", format)
			latin1 := "docs/caf\xe9 \"quoted\"\tname.txt"
			base, err := r.Commit("main", map[string][]byte{
				"README.md":  []byte("hello\n"),
				"old/name.c": []byte("int main(void) { return 0; }\n"),
				"gone.txt":   []byte("bye\n"),
			}, nil, "base")
			if err != nil {
				t.Fatal(err)
			}
			if len(base) != oidLength(format) {
				t.Fatalf("oid %q has the wrong length for %s", base, format)
			}
			if err := r.Branch("feature/\xff-bytes", "main"); err != nil {
				t.Fatal(err)
			}
			head, err := r.Commit("feature/\xff-bytes", map[string][]byte{
				latin1:       []byte("caf\xe9\n"),
				"bin/blob":   binaryBlob(7),
				"new/name.c": []byte("int main(void) { return 0; }\n"),
			}, []string{"old/name.c", "gone.txt"}, "feature")
			if err != nil {
				t.Fatal(err)
			}
			// main moves on after the branch point.
			if _, err := r.Commit("main", map[string][]byte{"README.md": []byte("hello, world\n")}, nil, "main moves"); err != nil {
				t.Fatal(err)
			}

			// The tree holds exactly the bytes given.
			names := gitOut(t, r, "ls-tree", "-r", "-z", "--name-only", head)
			if !strings.Contains(names, latin1+"\x00") {
				t.Errorf("ls-tree -z does not list the raw path: %q", names)
			}
			blob, err := r.Git("cat-file", "blob", head+":bin/blob")
			if err != nil || !bytes.Equal(blob, binaryBlob(7)) {
				t.Errorf("binary blob differs (%v)", err)
			}
			if gitOut(t, r, "rev-parse", "--show-object-format") != format {
				t.Errorf("object format is not %s", format)
			}

			pr, err := e.CreatePull("team", "project", PullOptions{Head: "feature/\xff-bytes", Base: "main", Title: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if mb := gitOut(t, r, "merge-base", "main", "feature/\xff-bytes"); pr.MergeBase() != mb || mb != base {
				t.Errorf("merge base %s, git says %s, branch point %s", pr.MergeBase(), mb, base)
			}
			if got := gitOut(t, r, "rev-parse", pr.HeadRef()); got != head {
				t.Errorf("%s = %s, want %s", pr.HeadRef(), got, head)
			}
			var diff bytes.Buffer
			if err := r.DiffBinary(context.Background(), &diff, pr.MergeBase(), pr.HeadRef()); err != nil {
				t.Fatal(err)
			}
			direct, err := r.Git("diff", "-p", "--binary", "--histogram", pr.MergeBase(), pr.HeadRef())
			if err != nil || !bytes.Equal(diff.Bytes(), direct) {
				t.Fatalf("DiffBinary differs from git diff (%v)", err)
			}
			for _, want := range []string{"GIT binary patch", "rename from old/name.c", "deleted file mode", `"b/docs/caf\351 \"quoted\"\tname.txt"`} {
				if !bytes.Contains(direct, []byte(want)) {
					t.Errorf("diff lacks %q", want)
				}
			}
			if tree := applyToTree(t, e, r, pr.MergeBase(), direct); tree != gitOut(t, r, "rev-parse", head+"^{tree}") {
				t.Errorf("merge base + diff = tree %s, not the head tree", tree)
			}

			// The API reports the same inputs.
			a := get(t, e, "/api/v1/repos/team/project/pulls/1", "")
			p := decode[apiPull](t, a)
			if p.MergeBase != base || p.Head.Sha != head || p.Base.Sha != gitOut(t, r, "rev-parse", "main") ||
				p.Head.Ref != "feature/\xff-bytes" && p.Head.Ref != "feature/\ufffd-bytes" {
				t.Errorf("API pull: merge_base %s head %s/%s base %s", p.MergeBase, p.Head.Ref, p.Head.Sha, p.Base.Sha)
			}
			if p.ChangedFiles != 4 { // two added, one renamed, one deleted
				t.Errorf("changed_files = %d, want 4", p.ChangedFiles)
			}
			repo := decode[apiRepository](t, get(t, e, "/api/v1/repos/team/project", ""))
			if repo.ObjectFormatName != format || repo.Empty {
				t.Errorf("object_format_name %q empty %v", repo.ObjectFormatName, repo.Empty)
			}
		})
	}
}

// applyToTree applies a binary diff to a tree in a temporary index and
// returns the resulting tree, as git apply sees it.
func applyToTree(t *testing.T, e *Emulator, r *Repo, base string, diff []byte) string {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + index}
	ctx := context.Background()
	if _, err := e.run(ctx, gitCmd{dir: r.gitDir, env: env, args: []string{"read-tree", base}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.run(ctx, gitCmd{dir: r.gitDir, env: env, args: []string{"apply", "--cached", "--binary"}, stdin: bytes.NewReader(diff)}); err != nil {
		t.Fatalf("git apply: %v", err)
	}
	out, err := e.run(ctx, gitCmd{dir: r.gitDir, env: env, args: []string{"write-tree"}})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestUpdatePullHead pushes to the head and the base and checks that the
// hidden ref and the stored merge base follow only when the push is handled.
func TestUpdatePullHead(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	r := newRepo(t, e, "team", "project", "sha1")
	c1, _ := r.Commit("main", map[string][]byte{"a": []byte("1\n")}, nil, "one")
	if err := r.Branch("topic", "main"); err != nil {
		t.Fatal(err)
	}
	h1, _ := r.Commit("topic", map[string][]byte{"b": []byte("1\n")}, nil, "topic one")
	pr, err := e.CreatePull("team", "project", PullOptions{Head: "topic", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := r.Commit("topic", map[string][]byte{"b": []byte("2\n")}, nil, "topic two")
	if got := gitOut(t, r, "rev-parse", pr.HeadRef()); got != h1 {
		t.Errorf("before the push is handled, %s = %s, want %s", pr.HeadRef(), got, h1)
	}
	if p := decode[apiPull](t, get(t, e, "/api/v1/repos/team/project/pulls/1", "")); p.Head.Sha != h2 {
		t.Errorf("head.sha = %s, want the branch tip %s (Forgejo reports the branch while it exists)", p.Head.Sha, h2)
	}
	// main moves and topic merges it: the merge base moves too.
	c2, _ := r.Commit("main", map[string][]byte{"a": []byte("2\n")}, nil, "two")
	if err := e.UpdatePullHead("team", "project", pr.Index()); err != nil {
		t.Fatal(err)
	}
	if got := gitOut(t, r, "rev-parse", pr.HeadRef()); got != h2 || pr.MergeBase() != c1 {
		t.Errorf("after the push: ref %s (want %s), merge base %s (want %s)", got, h2, pr.MergeBase(), c1)
	}
	if _, err := r.Git("update-ref", "refs/heads/topic", c2); err != nil { // a force-push onto main
		t.Fatal(err)
	}
	if err := e.UpdatePullHead("team", "project", pr.Index()); err != nil {
		t.Fatal(err)
	}
	if pr.MergeBase() != c2 || gitOut(t, r, "rev-parse", pr.HeadRef()) != c2 {
		t.Errorf("merge base %s, ref %s, want both %s", pr.MergeBase(), gitOut(t, r, "rev-parse", pr.HeadRef()), c2)
	}
	if err := e.SetPullMergeBase("team", "project", pr.Index(), c1); err != nil || pr.MergeBase() != c1 {
		t.Errorf("SetPullMergeBase: %v, %s", err, pr.MergeBase())
	}
	// With the branch gone, the API reports the hidden ref.
	if err := r.DeleteBranch("topic"); err != nil {
		t.Fatal(err)
	}
	if p := decode[apiPull](t, get(t, e, "/api/v1/repos/team/project/pulls/1", "")); p.Head.Ref != "refs/pull/1/head" || p.Head.Sha != c2 || p.Head.Name != "topic" {
		t.Errorf("head after branch deletion: %+v", p.Head)
	}
}

// TestDeterministicCommits checks that the same commits give the same OIDs
// in another repository and another emulator.
func TestDeterministicCommits(t *testing.T) {
	t.Parallel()
	build := func(e *Emulator, name string) []string {
		r := newRepo(t, e, "team", name, "sha1")
		var oids []string
		for i, files := range []map[string][]byte{{"a": []byte("1")}, {"b\xe9": binaryBlob(1)}, {"a": []byte("2")}} {
			oid, err := r.Commit("main", files, nil, "commit "+string(rune('A'+i)))
			if err != nil {
				t.Fatal(err)
			}
			oids = append(oids, oid)
		}
		return oids
	}
	e1, e2 := startEmu(t), startEmu(t)
	a, b, c := build(e1, "one"), build(e1, "two"), build(e2, "one")
	if strings.Join(a, ",") != strings.Join(b, ",") || strings.Join(a, ",") != strings.Join(c, ",") {
		t.Errorf("OIDs differ:\n%v\n%v\n%v", a, b, c)
	}
}

func TestSetupErrors(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	r := newRepo(t, e, "team", "project", "sha1")
	if _, err := r.Commit("main", map[string][]byte{"a": []byte("a")}, nil, "a"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"path with ..", second(r.Commit("main", map[string][]byte{"../x": nil}, nil, "")), ErrInvalid},
		{"absolute path", second(r.Commit("main", map[string][]byte{"/x": nil}, nil, "")), ErrInvalid},
		{"empty component", second(r.Commit("main", map[string][]byte{"a//b": nil}, nil, "")), ErrInvalid},
		{"NUL in path", second(r.Commit("main", map[string][]byte{"a\x00b": nil}, nil, "")), ErrInvalid},
		{"bad delete", second(r.Commit("main", nil, []string{"."}, "")), ErrInvalid},
		{"bad branch", second(r.Commit("a..b", nil, nil, "")), ErrInvalid},
		{"branch ending .lock", r.Branch("x.lock", "main"), ErrInvalid},
		{"branch from nothing", r.Branch("x", "nothing"), ErrNotFound},
		{"existing branch", r.Branch("main", "main"), ErrExists},
		{"bad repository name", second(e.CreateRepo("team", "a b", RepoOptions{})), ErrInvalid},
		{"bad object format", second(e.CreateRepo("team", "x", RepoOptions{ObjectFormat: "md5"})), ErrInvalid},
		{"existing repository", second(e.CreateRepo("TEAM", "Project", RepoOptions{})), ErrExists},
		{"existing user", second(e.AddUser("Team")), ErrExists},
		{"bad permission", e.AddCollaborator("team", "project", "bob", "owner"), ErrInvalid},
		{"collaborator on a missing repository", e.AddCollaborator("team", "nope", "bob", "read"), ErrNotFound},
		{"pull on itself", second(e.CreatePull("team", "project", PullOptions{Head: "main", Base: "main"})), ErrInvalid},
		{"pull from a missing branch", second(e.CreatePull("team", "project", PullOptions{Head: "nope", Base: "main"})), ErrNotFound},
		{"pull by a missing poster", second(e.CreatePull("team", "project", PullOptions{Head: "x", Base: "main", Poster: "ghost"})), ErrNotFound},
		{"state of a missing pull", e.SetPullState("team", "project", 9, "closed", false), ErrNotFound},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	if _, err := os.Stat(r.GitDir()); err != nil {
		t.Errorf("git dir: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
