package toolerr

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// toolsDoc is the operator reference whose "Error codes" table the code
// table owns.
const toolsDoc = "../../docs/tools.md"

// mdTable is one Markdown table: the heading it stands under, its header
// cells and its rows.
type mdTable struct {
	heading string
	line    int // 1-based, of the header
	header  []string
	rows    [][]string
}

// column returns the index of the header cell named name, or -1.
func (t mdTable) column(name string) int { return slices.Index(t.header, name) }

// markdownTables returns the pipe tables of a Markdown text, outside
// fenced code blocks.
func markdownTables(text string) []mdTable {
	lines := strings.Split(text, "\n")
	var tables []mdTable
	heading, fenced := "", false
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
		case fenced:
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		case strings.HasPrefix(line, "|") && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "| ---"):
			t := mdTable{heading: heading, line: i + 1, header: cells(line)}
			for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				t.rows = append(t.rows, cells(strings.TrimSpace(lines[i])))
			}
			tables = append(tables, t)
		}
	}
	return tables
}

func cells(line string) []string {
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// referenceRow is a code's row as docs/tools.md must show it: a code that
// only arrives in a tool result is "200" and "result".
func referenceRow(o outcome) []string {
	status, rpc := "200", "result"
	if o.status != 0 {
		status, rpc = strconv.Itoa(o.status), strconv.Itoa(o.rpc)
	}
	return []string{"`" + string(o.code) + "`", status, rpc, o.meaning}
}

func readToolsDoc(t *testing.T) []mdTable {
	t.Helper()
	b, err := os.ReadFile(toolsDoc)
	if err != nil {
		t.Fatal(err)
	}
	return markdownTables(string(b))
}

// TestToolsDocErrorCodes: docs/tools.md's "Error codes" table is the code
// table, row for row (code, HTTP status, JSON-RPC outcome, meaning).
func TestToolsDocErrorCodes(t *testing.T) {
	var ref *mdTable
	for _, tb := range readToolsDoc(t) {
		if tb.heading == "Error codes" {
			ref = &tb
			break
		}
	}
	if ref == nil {
		t.Fatalf(`%s has no table under a heading "Error codes"`, toolsDoc)
	}
	if want := []string{"code", "HTTP", "JSON-RPC", "meaning"}; !slices.Equal(ref.header, want) {
		t.Fatalf("%s:%d: header %q, want %q", toolsDoc, ref.line, ref.header, want)
	}
	documented := map[string]bool{}
	for _, row := range ref.rows {
		if len(row) > 0 {
			documented[row[0]] = true
		}
	}
	for i, o := range outcomes {
		want := referenceRow(o)
		if !documented[want[0]] {
			t.Errorf("%s is not documented; add the row\n| %s |", o.code, strings.Join(want, " | "))
			continue
		}
		if i >= len(ref.rows) || !slices.Equal(ref.rows[i], want) {
			got := "(none)"
			if i < len(ref.rows) {
				got = "| " + strings.Join(ref.rows[i], " | ") + " |"
			}
			t.Errorf("row %d of the Error codes table is\n%s\nwant (toolerr's table, in its order)\n| %s |", i+1, got, strings.Join(want, " | "))
		}
	}
	if len(ref.rows) > len(outcomes) {
		for _, row := range ref.rows[len(outcomes):] {
			t.Errorf("the Error codes table has a row the code does not: %q", row)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]*)`")

// TestToolsDocCodeColumns: every other table of docs/tools.md with a
// "code" column names only codes there are (a `prefix_*` pattern must
// match one), and where it has an "HTTP" column, the code's own status.
func TestToolsDocCodeColumns(t *testing.T) {
	checked := 0
	for _, tb := range readToolsDoc(t) {
		codeCol, httpCol := tb.column("code"), tb.column("HTTP")
		if codeCol < 0 || tb.heading == "Error codes" {
			continue
		}
		for _, row := range tb.rows {
			if codeCol >= len(row) {
				t.Errorf("%s:%d (%s): a row without a code cell: %q", toolsDoc, tb.line, tb.heading, row)
				continue
			}
			names := backticked.FindAllStringSubmatch(row[codeCol], -1)
			if len(names) == 0 {
				t.Errorf("%s:%d (%s): the code cell %q names no `code`", toolsDoc, tb.line, tb.heading, row[codeCol])
			}
			for _, m := range names {
				checked++
				matched := codesMatching(m[1])
				if len(matched) == 0 {
					t.Errorf("%s:%d (%s): %q is no error code", toolsDoc, tb.line, tb.heading, m[1])
					continue
				}
				if httpCol < 0 || httpCol >= len(row) {
					continue
				}
				for _, c := range matched {
					if want := strconv.Itoa(outcomeOf[c].status); outcomeOf[c].status == 0 || row[httpCol] != want {
						t.Errorf("%s:%d (%s): %s is shown as HTTP %s, want %s", toolsDoc, tb.line, tb.heading, c, row[httpCol], want)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no code column found: the parse is broken")
	}
}

// codesMatching returns the codes a documented name stands for: itself,
// or, for "prefix_*", every code with the prefix.
func codesMatching(name string) []Code {
	var out []Code
	for _, o := range outcomes {
		prefix, wild := strings.CutSuffix(name, "*")
		if string(o.code) == name || (wild && prefix != "" && strings.HasPrefix(string(o.code), prefix)) {
			out = append(out, o.code)
		}
	}
	return out
}
