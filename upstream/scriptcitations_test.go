package upstream_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// styleGuide is the house style file, which lives outside the repository
// like the design file; spelled in pieces so this file does not match.
var styleGuide = regexp.MustCompile(`STY` + `LE\.md`)

// TestScriptCitationsResolve holds the build and CI scripts' comments to
// the rule the Go files keep: what they cite is in the repository.
func TestScriptCitationsResolve(t *testing.T) {
	anchors := docAnchors(t, filepath.Join("..", "docs"))
	for _, name := range []string{"Makefile", ".ci/run"} {
		for _, p := range scriptProblems(anchors, readLines(t, filepath.Join("..", name))) {
			t.Errorf("%s:%s", name, p)
		}
	}
}

// TestScriptProblemsFinds proves the check can fail on a script comment
// and leaves commands alone.
func TestScriptProblemsFinds(t *testing.T) {
	lines := []string{
		"# the rule of " + "DES" + "IGN " + "§" + "9",
		"# clean (" + "STY" + "LE.md rule 6)",
		"# see docs/no-such-file.md",
		"# see docs/architecture.md#store",
		"echo issue " + "7 # a command, not a comment",
	}
	got := scriptProblems(docAnchors(t, filepath.Join("..", "docs")), lines)
	if len(got) != 3 || !strings.HasPrefix(got[2], "3:") {
		t.Fatalf("problems %q, want lines 1-3", got)
	}
}

// scriptProblems checks the comment lines (# …) of a shell script or
// Makefile and returns "line: problem" for each one that cites what the
// repository does not hold.
func scriptProblems(anchors map[string]map[string]bool, lines []string) []string {
	var bad []string
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "#!") {
			continue
		}
		p := lineProblem(anchors, trimmed, trimmed)
		if p == "" && styleGuide.MatchString(trimmed) {
			p = "cites the style file, which the repository does not hold"
		}
		if p != "" {
			bad = append(bad, fmt.Sprintf("%d: %s: %s", i+1, p, trimmed))
		}
	}
	return bad
}
