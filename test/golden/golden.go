// Package golden keeps contracts visible: a test renders what the gateway
// says (a schema, a tools/list, a JSON-RPC exchange) and Compare checks it
// against a file committed under testdata/, so a changed contract is a
// failing diff until someone reruns the test with -update and commits the
// new file. Normalizer replaces the values that differ between runs (times,
// ports, random IDs, commit SHAs, cursors) by stable placeholders first.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// Compare compares got with the golden file at path (relative to the test's
// package directory), or, with -update, writes got there.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file (run go test -update if the change is intended)\n%s", path, Diff(want, got))
	}
}

// Diff describes how got differs from want line by line: the first
// differing line with a few lines of context, and both line counts. It is
// enough to find a changed contract; git diff shows the rest after -update.
func Diff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d (golden has %d lines, got %d):\n", i+1, len(w), len(g))
	from := max(0, i-3)
	for j := from; j < i; j++ {
		fmt.Fprintf(&b, "  %s\n", w[j])
	}
	for j := i; j < min(len(w), i+3); j++ {
		fmt.Fprintf(&b, "- %s\n", w[j])
	}
	for j := i; j < min(len(g), i+3); j++ {
		fmt.Fprintf(&b, "+ %s\n", g[j])
	}
	return b.String()
}

// The values that change from run to run. Order matters: times before
// hex (a time holds no hex run of 40), IDs before anything else that
// could match inside them.
var (
	timeRE   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	portRE   = regexp.MustCompile(`(127\.0\.0\.1|localhost):\d+`)
	idRE     = regexp.MustCompile(`\b[a-z]{3}_[a-z2-7]{26}\b`)
	sha1RE   = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	cursorRE = regexp.MustCompile(`"((?:next_)?cursor)"(\s*):(\s*)"[^"]*"`)
)

// Normalizer replaces run-dependent values by placeholders. A random ID or
// a commit SHA becomes a numbered placeholder (<src_1>, <sha1_2>) in order
// of first appearance, so that the same value keeps the same name across
// every text one Normalizer sees: which source a cursor or a workflow
// names stays visible in the golden file.
type Normalizer struct {
	names map[string]string
	count map[string]int
}

// NewNormalizer returns a Normalizer with no names given yet.
func NewNormalizer() *Normalizer {
	return &Normalizer{names: map[string]string{}, count: map[string]int{}}
}

// Text normalizes s: RFC 3339 times become <time>, loopback ports <port>,
// store IDs (three letters, "_", 26 base32 characters) <xxx_N>, 40-hex
// commit SHAs <sha1_N>, and the value of every "cursor" and "next_cursor"
// member <cursor> (cursors are signed with a per-run secret). The SHA-256
// of content is left as is: the content is the same on every run.
func (n *Normalizer) Text(s string) string {
	s = timeRE.ReplaceAllString(s, "<time>")
	s = portRE.ReplaceAllString(s, "$1:<port>")
	s = idRE.ReplaceAllStringFunc(s, func(id string) string { return n.name(id[:3], id) })
	s = sha1RE.ReplaceAllStringFunc(s, func(sha string) string { return n.name("sha1", sha) })
	return cursorRE.ReplaceAllString(s, `"$1"$2:$3"<cursor>"`)
}

func (n *Normalizer) name(kind, value string) string {
	if p, ok := n.names[value]; ok {
		return p
	}
	n.count[kind]++
	p := fmt.Sprintf("<%s_%d>", kind, n.count[kind])
	n.names[value] = p
	return p
}
