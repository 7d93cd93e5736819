package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// guideBlock returns the fenced code block of doc (a path from the module
// root) that follows the line `<!-- tested-by: <test> … -->`: the commands
// a guide shows are the commands its test runs, so the two cannot drift.
// A second block tagged for the same test is the next one: n picks it.
func guideBlock(t *testing.T, doc, test string, n int) string {
	t.Helper()
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	tagged, seen := false, 0
	var block []string
	in := false
	for lines.Scan() {
		line := lines.Text()
		switch {
		case in && strings.HasPrefix(line, "```"):
			if seen == n {
				return strings.Join(block, "\n") + "\n"
			}
			in, block = false, nil
			seen++
		case in:
			block = append(block, line)
		case strings.HasPrefix(line, "<!-- tested-by: "+test+" "):
			tagged = true
		case tagged && strings.HasPrefix(line, "```"):
			in, tagged = true, false
		}
	}
	t.Fatalf("%s has no code block %d tagged <!-- tested-by: %s … -->", doc, n, test)
	return ""
}

// replaceAll applies old, new pairs to s, failing the test when an old
// string is not there (the guide changed under the test).
func replaceAll(t *testing.T, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("the guide's block no longer has %q:\n%s", pairs[i], s)
		}
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	return s
}
