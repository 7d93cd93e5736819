// Package upstream_test (this file) pins the direction imports may take between the
// gateway's layers (docs/architecture.md#import-direction): errors and checks
// flow downward, so a lower layer never reaches up into the code that calls
// it.
package upstream_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/agent-gateway/agent-gateway/"

// layerRules names, per folder of the module (and everything below it), the
// module folders its production code must not import. upstream/, the lowest
// layer, holds the leaf vocabulary every layer shares (toolerr, strictjson,
// forgejo/diffpage); those leaves import nothing of the module.
var layerRules = []struct {
	dir       string
	forbidden []string
}{
	{"upstream", []string{"handlers", "middleware", "server", "store", "web", "test"}},
	{"middleware", []string{"handlers", "server", "store", "web", "test"}},
	{"upstream/toolerr", []string{"handlers", "middleware", "server", "store", "upstream", "web", "test"}},
	{"upstream/strictjson", []string{"handlers", "middleware", "server", "store", "upstream", "web", "test"}},
	{"upstream/forgejo/diffpage", []string{"handlers", "middleware", "server", "store", "upstream", "web", "test"}},
}

// TestLayersImportDownward parses the import clauses of every production
// file (all build tags, no _test.go) under each ruled folder and fails on an
// import into a forbidden folder. It reads the files with go/parser rather
// than asking the go tool, so it needs nothing but the tree.
func TestLayersImportDownward(t *testing.T) {
	for _, rule := range layerRules {
		t.Run(rule.dir, func(t *testing.T) {
			files, bad := violations(t, filepath.Join("..", rule.dir), rule.forbidden)
			if files == 0 {
				t.Fatalf("no Go files under %s: the rule checks nothing", rule.dir)
			}
			for _, b := range bad {
				t.Errorf("%s: %s/ must import only downward", b, rule.dir)
			}
		})
	}
}

// TestViolationsFindsUpwardImport proves the check can fail: a tree whose
// production file imports handlers/ is reported, its test file is not.
func TestViolationsFindsUpwardImport(t *testing.T) {
	dir := t.TempDir()
	write := func(name, imp string) {
		src := "package bad\n\nimport _ \"" + imp + "\"\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("bad.go", module+"handlers/toolset")
	write("ok.go", "net/http")
	write("bad_test.go", module+"handlers/args")
	files, bad := violations(t, dir, []string{"handlers"})
	if files != 2 || len(bad) != 1 || !strings.Contains(bad[0], "handlers/toolset") {
		t.Fatalf("violations = %d files, %q; want 2 files and the one handlers/toolset import", files, bad)
	}
}

// violations walks root and returns how many production files it read and
// "file imports path" for each import into a forbidden module folder.
func violations(t *testing.T, root string, forbidden []string) (int, []string) {
	t.Helper()
	files := 0
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		files++
		for _, imp := range importsOf(t, p) {
			for _, f := range forbidden {
				if imp == module+f || strings.HasPrefix(imp, module+f+"/") {
					bad = append(bad, p+" imports "+imp)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, bad
}

func importsOf(t *testing.T, p string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("parse %s: %v", p, err)
	}
	out := make([]string, 0, len(f.Imports))
	for _, imp := range f.Imports {
		s, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatalf("%s: import %s: %v", p, imp.Path.Value, err)
		}
		out = append(out, s)
	}
	return out
}
