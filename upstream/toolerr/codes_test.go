package toolerr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// declaredCodes parses the package's own source and returns every
// constant of type Code, value → name: what the compiler knows, so that a
// constant added without its row in outcomes cannot hide.
func declaredCodes(t *testing.T) map[Code]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	codes := map[Code]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					// A Code constant is declared with its type; one
					// written as Code("…") or in an iota group would
					// escape this walk, so it is refused here.
					for _, v := range vs.Values {
						if call, ok := v.(*ast.CallExpr); ok {
							if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "Code" {
								t.Errorf("%s: declare Code constants as `Name Code = \"…\"`", fset.Position(vs.Pos()))
							}
						}
					}
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal", fset.Position(n.Pos()), n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					if prev, dup := codes[Code(v)]; dup {
						t.Errorf("%s and %s are both %q", prev, n.Name, v)
					}
					codes[Code(v)] = n.Name
				}
			}
		}
	}
	if len(codes) == 0 {
		t.Fatal("no Code constants found: the walk is broken")
	}
	return codes
}

// TestEveryCodeHasOneOutcome: the table lists each declared code exactly
// once and nothing else.
func TestEveryCodeHasOneOutcome(t *testing.T) {
	declared := declaredCodes(t)
	rows := map[Code]int{}
	for _, o := range outcomes {
		rows[o.code]++
		if _, ok := declared[o.code]; !ok {
			t.Errorf("outcomes lists %q, which is no Code constant", o.code)
		}
		if o.meaning == "" || strings.Contains(o.meaning, "|") || strings.Contains(o.meaning, "\n") {
			t.Errorf("%s: the meaning must be one non-empty table line without '|'", o.code)
		}
	}
	for code, name := range declared {
		if rows[code] != 1 {
			t.Errorf("%s (%q) has %d rows in outcomes, want 1", name, code, rows[code])
		}
	}
}

func TestIndexOutcomesRefusesABrokenTable(t *testing.T) {
	cases := []struct {
		name  string
		table []outcome
	}{
		{"a code twice", []outcome{{NotFound, 0, 0, "a"}, {NotFound, 0, 0, "b"}}},
		{"a status without a JSON-RPC code", []outcome{{NotFound, 404, 0, "a"}}},
		{"a JSON-RPC code without a status", []outcome{{NotFound, 0, -32000, "a"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			indexOutcomes(tc.table)
		})
	}
}

// TestToolResultCodesFallBack: a code with no HTTP presentation of its own
// is presented as internal_error would be, if middleware ever refused with it.
func TestToolResultCodesFallBack(t *testing.T) {
	for _, o := range outcomes {
		if o.status != 0 {
			continue
		}
		if o.code.HTTPStatus() != 500 || o.code.RPCCode() != -32603 {
			t.Errorf("%s: HTTP %d RPC %d, want the 500/-32603 fallback", o.code, o.code.HTTPStatus(), o.code.RPCCode())
		}
	}
	if Code("no_such_code").HTTPStatus() != 500 || Code("no_such_code").RPCCode() != -32603 {
		t.Error("an unknown code does not fall back to 500/-32603")
	}
}
