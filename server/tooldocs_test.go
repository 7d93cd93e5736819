package server

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/documents"
	"github.com/agent-gateway/agent-gateway/handlers/instructions"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
)

// documentedTool is one row of the "Tools" table of docs/tools.md.
type documentedTool struct {
	endpoint string
	scopes   []string
}

// TestToolReferenceMatchesToolsets checks the tool reference both ways:
// every tool a toolset serves has a row in docs/tools.md's "Tools" table,
// every row names a served tool, and the row's endpoint and scopes are the
// ones the tool declares. A tool added without its documentation, or a
// scope changed without the reference, fails here.
func TestToolReferenceMatchesToolsets(t *testing.T) {
	doc, err := os.ReadFile("../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := toolTable(t, string(doc))
	served := map[string]*toolset.Toolset{
		"/mcp/forgejo":   forgejoToolset(nil, nil),
		"/mcp/documents": documentsToolset(documents.Options{}, instructions.Options{}),
	}
	seen := map[string]bool{}
	for endpoint, c := range served {
		for _, tool := range c.Tools() {
			seen[tool.Name] = true
			row, ok := rows[tool.Name]
			if !ok {
				t.Errorf("%s serves %s; docs/tools.md's Tools table does not list it", endpoint, tool.Name)
				continue
			}
			if row.endpoint != endpoint {
				t.Errorf("%s: documented at %s, served at %s", tool.Name, row.endpoint, endpoint)
			}
			var scopes []string
			for _, s := range tool.Policy.Scopes {
				scopes = append(scopes, s.Name)
			}
			slices.Sort(scopes)
			if !slices.Equal(row.scopes, scopes) {
				t.Errorf("%s: documented scopes %q, the tool checks %q", tool.Name, row.scopes, scopes)
			}
		}
	}
	for name := range rows {
		if !seen[name] {
			t.Errorf("docs/tools.md lists %s, which no toolset serves", name)
		}
	}
}

// TestToolTableParses: the parser reads scopes lists and "none", and
// refuses a row twice.
func TestToolTableParses(t *testing.T) {
	doc := "# Reference\n## Tools\n\n| tool | endpoint | scopes | section |\n| --- | --- | --- | --- |\n" +
		"| `a` | `/mcp/x` | none | s |\n| `b` | `/mcp/y` | `s:w`, `s:r` | s |\n\n## Next\n"
	rows := toolTable(t, doc)
	if len(rows) != 2 || rows["a"].endpoint != "/mcp/x" || rows["a"].scopes != nil ||
		!slices.Equal(rows["b"].scopes, []string{"s:r", "s:w"}) {
		t.Fatalf("rows = %+v", rows)
	}
}

var backtickedNames = regexp.MustCompile("`([^`]+)`")

// toolTable reads the table of the "## Tools" section: tool, endpoint,
// scopes ("none" or backticked names), section link.
func toolTable(t *testing.T, doc string) map[string]documentedTool {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Tools\n")
	if !ok {
		t.Fatal(`docs/tools.md has no "## Tools" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]documentedTool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) != 4 {
			continue
		}
		name := strings.Trim(cells[0], "`")
		if _, dup := rows[name]; dup {
			t.Errorf("docs/tools.md lists %s twice", name)
		}
		row := documentedTool{endpoint: strings.Trim(cells[1], "`")}
		if cells[2] != "none" {
			for _, m := range backtickedNames.FindAllStringSubmatch(cells[2], -1) {
				row.scopes = append(row.scopes, m[1])
			}
			if row.scopes == nil {
				t.Errorf("%s: scopes cell %q is neither none nor backticked names", name, cells[2])
			}
		}
		slices.Sort(row.scopes)
		rows[name] = row
	}
	if len(rows) == 0 {
		t.Fatal("docs/tools.md's Tools table has no rows")
	}
	return rows
}
