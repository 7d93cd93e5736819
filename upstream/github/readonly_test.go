package github

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// httpMethods are the request methods, as Go source could spell them.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"}

// TestNoGitHubWritePath is the static half of the read-only rule of
// docs/architecture.md#documents-contract (the gateway pushes no code, opens
// no pull request and changes no deployment infrastructure): in the package's
// production code every request method is http.MethodGet, but one
// http.MethodPost in the declaration of routeMint (the installation token,
// which writes nothing of a repository), and an exchange's method is set only
// from a method constant or, in apiExchange, from its route's. A method from
// another variable or a string, any other method constant, a second POST, or
// a request built other than through upstream.Exchange (NewRequest, Do) fails
// it.
func TestNoGitHubWritePath(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	posts, parsed := 0, 0
	// inspect checks one declaration (or one var spec); postOK says it is
	// routeMint's, inExchange that it is apiExchange.
	inspect := func(node ast.Node, postOK, inExchange bool) {
		ast.Inspect(node, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "http" && strings.HasPrefix(n.Sel.Name, "Method") {
					switch {
					case n.Sel.Name == "MethodGet":
					case n.Sel.Name == "MethodPost" && postOK:
						posts++
					default:
						t.Errorf("%s: http.%s", fset.Position(n.Pos()), n.Sel.Name)
					}
				}
				if up, ok := n.X.(*ast.SelectorExpr); ok && up.Sel.Name == "up" && n.Sel.Name != "Exchange" {
					t.Errorf("%s: the upstream client used other than through Exchange (%s)", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && slices.Contains(httpMethods, strings.ToUpper(s)) {
					t.Errorf("%s: a method as a string, %q", fset.Position(n.Pos()), s)
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Method" && i < len(n.Rhs) && !isMethodConst(n.Rhs[i]) {
						t.Errorf("%s: Method set from %T, not a method constant", fset.Position(n.Pos()), n.Rhs[i])
					}
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Method" && !isMethodConst(n.Value) && !(inExchange && isRouteMethod(n.Value)) {
					t.Errorf("%s: Method: from %T, not a method constant", fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					vs, ok := spec.(*ast.ValueSpec)
					inspect(spec, ok && len(vs.Names) == 1 && vs.Names[0].Name == "routeMint", false)
				}
			case *ast.FuncDecl:
				inspect(d, false, d.Name.Name == "apiExchange" && d.Recv == nil)
			}
		}
	}
	if parsed < 5 || posts != 1 {
		t.Fatalf("%d files, %d POSTs in routeMint: want the package's files and exactly the mint's POST", parsed, posts)
	}
}

// isRouteMethod reports whether e is route.Method: apiExchange's method
// comes from the route it is given, whose declarations the test checks.
func isRouteMethod(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Method" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "route"
}

func isMethodConst(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "http" && strings.HasPrefix(sel.Sel.Name, "Method")
}

// TestGitHubClientSendsOnlyReads is the dynamic half: every exported
// method of the package's types that talks to GitHub is called against
// the emulator, and every request it sends is a GET except the token
// mint's POST. The exported methods are listed, so a new one fails here
// until it is walked too.
func TestGitHubClientSendsOnlyReads(t *testing.T) {
	exported := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumMethod() {
			out = append(out, typ.Method(i).Name)
		}
		return out
	}
	for _, c := range []struct {
		v    any
		want []string
	}{
		{&Client{}, []string{"BranchHead", "GetFile", "SetCallTimeout"}},
		{&Installations{}, []string{"Configured", "Invalidate", "Observe", "Token"}},
		{&App{}, []string{"ID", "JWT"}},
	} {
		if got := exported(c.v); !slices.Equal(got, c.want) {
			t.Fatalf("%T has the exported methods %v; walk the new ones below, then list them: %v", c.v, got, c.want)
		}
	}
	s := newStack(t, githubemu.Options{}, true)
	ctx := context.Background()
	d := s.docs
	s.client.SetCallTimeout(time.Minute) // sends nothing
	if _, err := s.client.GetFile(ctx, s.req(d.Readme)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.BranchHead(ctx, BranchRequest{InstallationID: d.InstallationID, Owner: "octo", Repo: "docs", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	tok, err := s.tokens.Token(ctx, d.InstallationID, "docs")
	if err != nil {
		t.Fatal(err)
	}
	s.tokens.Invalidate(d.InstallationID, "docs", tok)
	if _, err := s.tokens.Token(ctx, d.InstallationID, "docs"); err != nil {
		t.Fatal(err)
	}
	_ = s.tokens.Configured()
	s.tokens.Observe(func(string) {})
	routes := map[githubemu.Route]int{}
	for _, r := range s.emu.Requests() {
		routes[r.Route]++
		switch {
		case r.Method == http.MethodGet && (r.Route == githubemu.RouteContents || r.Route == githubemu.RouteBranch):
		case r.Method == http.MethodPost && r.Route == githubemu.RouteToken:
		default:
			t.Errorf("%s %s (route %s): a request that is neither a read nor the token mint", r.Method, r.RawPath, r.Route)
		}
	}
	if routes[githubemu.RouteContents] == 0 || routes[githubemu.RouteBranch] == 0 || routes[githubemu.RouteToken] != 2 {
		t.Fatalf("routes %v: the walk did not reach every route (two mints: one before, one after Invalidate)", routes)
	}
}
