package server

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// operatorDocs are the files an operator reads for configuration keys.
func operatorDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	return append(docs, "../README.md")
}

// keyTableRow is one row of a docs table of keys: | key | environment |
// default or what |.
type keyTableRow struct {
	file            string
	line            int
	key, env, third string
	hasDefault      bool
}

// keyTables returns the rows of every Markdown table in path whose header
// starts "| key | environment |".
func keyTables(t *testing.T, path string) []keyTableRow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []keyTableRow
	inTable, hasDefault := false, false
	for i, line := range strings.Split(string(data), "\n") {
		cells := tableCells(line)
		switch {
		case cells == nil:
			inTable = false
		case len(cells) >= 2 && cells[0] == "key" && cells[1] == "environment":
			inTable, hasDefault = true, len(cells) >= 3 && cells[2] == "default"
		case inTable && strings.Trim(cells[0], "-: ") == "":
		case inTable:
			row := keyTableRow{file: path, line: i + 1, key: cells[0], env: cells[1], hasDefault: hasDefault}
			if len(cells) >= 3 {
				row.third = cells[2]
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// tableCells splits a Markdown table line into its trimmed cells, nil for
// a line that is not one.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// backticked is the text of a cell that is one code span, "" otherwise.
func backticked(cell string) string {
	if m := regexp.MustCompile("^`([^`]+)`$").FindStringSubmatch(cell); m != nil {
		return m[1]
	}
	return ""
}

// docDefault reads the default a docs cell states: its leading code span,
// or its first word without trailing punctuation; "none" is the empty
// value.
func docDefault(cell string) string {
	v := ""
	if m := regexp.MustCompile("^`([^`]*)`").FindStringSubmatch(cell); m != nil {
		v = m[1]
	} else if f := strings.Fields(cell); len(f) > 0 {
		v = strings.TrimRight(f[0], ",;:.")
	}
	if v == "none" {
		return ""
	}
	return v
}

// TestDocsKeyTables holds every docs table of keys (README.md and
// docs/*.md, header "| key | environment | …") to the settings table:
// each row names a real key by its real variable, and where the table has
// a default column, the default it states is the row's default (parsed by
// the row's own parser, so 10m and 10m0s agree).
func TestDocsKeyTables(t *testing.T) {
	byKey := map[string]setting{}
	for _, s := range settings {
		byKey[s.key] = s
	}
	d := Default()
	rows := 0
	for _, path := range operatorDocs(t) {
		for _, r := range keyTables(t, path) {
			rows++
			where := fmt.Sprintf("%s:%d", filepath.Base(r.file), r.line)
			s, ok := byKey[backticked(r.key)]
			if !ok {
				t.Errorf("%s: %s is not a key", where, r.key)
				continue
			}
			if env := backticked(r.env); env != s.Env() {
				t.Errorf("%s: %s is read from %s, the docs say %s", where, s.key, s.Env(), r.env)
			}
			if !r.hasDefault {
				continue
			}
			c := Default()
			if err := s.set(&c, docDefault(r.third)); err != nil {
				t.Errorf("%s: the default of %s reads %q, which it refuses: %v", where, s.key, r.third, err)
				continue
			}
			if got, want := s.show(&c), s.show(&d); got != want {
				t.Errorf("%s: the docs give %s the default %q, it is %q", where, s.key, docDefault(r.third), want)
			}
		}
	}
	if rows == 0 {
		t.Fatal("found no docs table of keys")
	}
}

// TestDocDefault pins how a docs cell states a default.
func TestDocDefault(t *testing.T) {
	for cell, want := range map[string]string{
		"`cursor,vscode`; empty: reverse-DNS schemes only": "cursor,vscode",
		"none: port 443 only":                              "",
		"none (443 only)":                                  "",
		"10 per client address":                            "10",
		"120, all addresses together":                      "120",
		"`false` (tests and local development)":            "false",
		"720h":                                             "720h",
	} {
		if got := docDefault(cell); got != want {
			t.Errorf("docDefault(%q) = %q, want %q", cell, got, want)
		}
	}
}

// TestDocsNameKnownVariables: every AGENT_GATEWAY_* and HEYAIRA_GITHUB_*
// variable the operator docs, the README, the deployment files under
// configs/ and the gateway's own code (not its tests, which misspell on
// purpose) name is one Load accepts, so no doc tells an operator to set a
// variable that fails the start or is ignored.
func TestDocsNameKnownVariables(t *testing.T) {
	files := operatorDocs(t)
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir():
		case strings.HasPrefix(path, filepath.Join("..", "configs")+string(filepath.Separator)),
			strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	known := knownVariables()
	name := regexp.MustCompile(`\b(AGENT_GATEWAY|HEYAIRA_GITHUB)_[A-Z0-9_]*[A-Z0-9]\b`)
	seen := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range name.FindAllString(string(data), -1) {
			seen++
			if !slices.Contains(known, v) && !serviceLinkName(v) {
				t.Errorf("%s names %s, which Load refuses as unknown", path, v)
			}
		}
	}
	if seen == 0 {
		t.Fatal("found no variable named anywhere")
	}
}

// serviceLinkName reports whether name has the shape of a Kubernetes
// Service variable.
func serviceLinkName(name string) bool {
	for _, l := range serviceLinks {
		if l.name.MatchString(name) {
			return true
		}
	}
	return false
}

// TestReadmeListsOtherVariables: the README's table of the variables that
// are not keys lists each of otherVariables, the list Load accepts.
func TestReadmeListsOtherVariables(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range otherVariables {
		if !regexp.MustCompile("(?m)^\\| [^\\n]*`" + o.name + "`[^\\n]*\\|").Match(readme) {
			t.Errorf("README.md has no table row for %s (%s)", o.name, o.readBy)
		}
	}
}
