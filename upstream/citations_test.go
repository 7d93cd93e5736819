// This file pins that what the code cites can be followed from the
// repository: comments point at docs/architecture.md or another file under
// docs/, by an anchor that exists, never at documents the repository does
// not hold or at issue numbers (those belong in commit messages).
package upstream_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The words a citation must not use, spelled in pieces so that this file
// does not match itself.
var unresolvable = []*regexp.Regexp{
	regexp.MustCompile(`DES` + `IGN`),
	regexp.MustCompile(`seeds` + `/`),
	regexp.MustCompile(`(?i)\bseed ` + `\d{3}`),
	regexp.MustCompile(`(?i)\bissue ` + `\d`),
}

// section finds a section sign; specSection is one a public specification
// owns ("RFC 9110 §5.3", "JSON-RPC 2.0 §5", "OAuth 2.1 §4.1.1"). Any other
// section sign cites a document the reader cannot find.
var (
	section     = regexp.MustCompile(`§\s*\d`)
	specSection = regexp.MustCompile(`(RFC \d{3,5}|JSON-RPC 2\.0|OAuth 2\.1),? §\d`)
)

// docLink is a citation of a file under docs/, with an optional anchor.
var docLink = regexp.MustCompile(`\bdocs/([A-Za-z0-9_-]+\.md)(#[a-z0-9_-]+)?`)

// mdLink is a Markdown link target inside docs/: another file, an anchor,
// or both.
var mdLink = regexp.MustCompile(`\]\(([A-Za-z0-9_-]+\.md)?(#[a-z0-9_-]+)?\)`)

// TestCitationsResolve reads every Go file of the module (tests and test/
// included) and fails on a citation that cannot be followed: a design file
// or source contract that is not in the repository, an issue number, a bare
// section sign, or a docs/ file or anchor that does not exist.
func TestCitationsResolve(t *testing.T) {
	root := ".."
	anchors := docAnchors(t, filepath.Join(root, "docs"))
	bad, files := citationProblems(t, root, anchors)
	if files < 100 {
		t.Fatalf("read %d Go files: the walk misses the tree", files)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestDocLinksResolve: every Markdown link between the files of docs/ (and
// to an anchor of the same file) lands on a heading that exists.
func TestDocLinksResolve(t *testing.T) {
	dir := filepath.Join("..", "docs")
	anchors := docAnchors(t, dir)
	for name := range anchors {
		for i, line := range readLines(t, filepath.Join(dir, name)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				if m[1] == "" && m[2] == "" {
					continue
				}
				if p := linkProblem(anchors, name, m[1], m[2]); p != "" {
					t.Errorf("docs/%s:%d: %s", name, i+1, p)
				}
			}
		}
	}
}

// TestCitationProblemsFinds proves the check can fail: each kind of bad
// citation in a tree is reported, and good ones are not.
func TestCitationProblemsFinds(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.Mkdir(docs, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(docs, "architecture.md"), "# Architecture\n\n## Flow: verified diff page\n")
	bad := []string{
		"// the rule of " + "DES" + "IGN §5.2",
		"// seed " + "000 wants it",
		"// found in issue " + "13",
		"// as §" + "4 says",
		"// see docs/architecture.md#no-such-heading",
		"// see docs/missing.md",
		"// the rule of seed\n// " + "004, wrapped",
	}
	good := []string{
		"// see docs/architecture.md#flow-verified-diff-page",
		"// a list (RFC 9110 §5.3) and JSON-RPC 2.0 §5",
		"// docs/architecture.md",
	}
	src := "package p\n\n" + strings.Join(append(bad, good...), "\n") + "\n"
	write(t, filepath.Join(dir, "p.go"), src)

	got, files := citationProblems(t, dir, docAnchors(t, docs))
	if files != 1 {
		t.Fatalf("read %d files, want 1", files)
	}
	if len(got) != len(bad) {
		t.Fatalf("found %d problems, want %d:\n%s", len(got), len(bad), strings.Join(got, "\n"))
	}
	for i, p := range got {
		if !strings.Contains(p, fmt.Sprintf("p.go:%d:", i+3)) {
			t.Errorf("problem %d is %q, want line %d", i, p, i+3)
		}
	}
}

// TestSlug pins the heading-to-anchor rule of GitHub's Markdown renderer.
func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Flow: verified diff page":              "flow-verified-diff-page",
		"`get_pull_request_diff` and its page":  "get_pull_request_diff-and-its-page",
		"Hostile callers, round two":            "hostile-callers-round-two",
		"Collector policy (runtime.gc_percent)": "collector-policy-runtimegc_percent",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func citationProblems(t *testing.T, root string, anchors map[string]map[string]bool) (bad []string, files int) {
	t.Helper()
	self, err := filepath.Abs("citations_test.go")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		if abs, _ := filepath.Abs(path); abs == self {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		comment := commentLines(t, path)
		for i, line := range readLines(t, path) {
			p := lineProblem(anchors, line, comment[i+1])
			if p == "" {
				p = wrappedProblem(comment[i+1], comment[i+2])
			}
			if p != "" {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %s", rel, i+1, p, strings.TrimSpace(line)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad, files
}

// lineProblem checks one line of Go; doc links are checked only in its
// comment, since string literals name documents of test repositories.
func lineProblem(anchors map[string]map[string]bool, line, comment string) string {
	for _, re := range unresolvable {
		if re.MatchString(line) {
			return "cites what the repository does not hold (" + re.String() + ")"
		}
	}
	if n, ok := len(section.FindAllString(line, -1)), len(specSection.FindAllString(line, -1)); n > ok {
		return "a section sign without the specification it belongs to"
	}
	for _, m := range docLink.FindAllStringSubmatch(comment, -1) {
		if p := linkProblem(anchors, "", m[1], m[2]); p != "" {
			return p
		}
	}
	return ""
}

// wrappedProblem finds, in the comment on one line and the comment on the
// next, a citation the line break splits ("seed" ending one line, its
// number starting the next), which neither line shows alone; one the next
// line shows alone is its own line's problem.
func wrappedProblem(comment, next string) string {
	if comment == "" || next == "" {
		return ""
	}
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(next), "//"))
	for _, re := range unresolvable {
		if re.MatchString(comment+" "+rest) && !re.MatchString(next) {
			return "cites what the repository does not hold (" + re.String() + ")"
		}
	}
	return ""
}

// commentLines maps each line number of a Go file to the comment text on it.
func commentLines(t *testing.T, path string) map[int]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			start := fset.Position(c.Pos()).Line
			for i, l := range strings.Split(c.Text, "\n") {
				out[start+i] += l
			}
		}
	}
	return out
}

// linkProblem checks file#anchor against the headings of docs/; an empty
// file means the file the link is in (from).
func linkProblem(anchors map[string]map[string]bool, from, file, anchor string) string {
	if file == "" {
		file = from
	}
	heads, ok := anchors[file]
	if !ok {
		return "docs/" + file + " does not exist"
	}
	if anchor != "" && !heads[strings.TrimPrefix(anchor, "#")] {
		return "docs/" + file + " has no heading " + anchor
	}
	return ""
}

// docAnchors maps each Markdown file of dir to the anchors of its headings.
func docAnchors(t *testing.T, dir string) map[string]map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		heads, seen := map[string]bool{}, map[string]int{}
		fenced := false
		for _, line := range readLines(t, filepath.Join(dir, e.Name())) {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
			}
			if fenced || !strings.HasPrefix(line, "#") {
				continue
			}
			s := slug(strings.TrimLeft(line, "# "))
			if n := seen[s]; n > 0 {
				heads[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				heads[s] = true
			}
			seen[s]++
		}
		out[e.Name()] = heads
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, spaces to hyphens,
// every other character but letters, digits, '-' and '_' dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
