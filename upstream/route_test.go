package upstream

import (
	"slices"
	"testing"
)

// TestRouteSegments: a route fills its parameters in order, a {b}.diff one
// with its suffix and a {b...} one as several segments, and the path it
// builds is one its template matches.
func TestRouteSegments(t *testing.T) {
	for _, tc := range []struct {
		template string
		values   []string
		want     []string
	}{
		{"/api/v1/repos/search", nil, []string{"api", "v1", "repos", "search"}},
		{"/api/v1/repos/{owner}/{repo}", []string{"o", "r"}, []string{"api", "v1", "repos", "o", "r"}},
		{"/api/v1/repos/{owner}/{repo}/pulls/{index}.diff", []string{"o", "r", "7"}, []string{"api", "v1", "repos", "o", "r", "pulls", "7.diff"}},
		{"/repos/{owner}/{repo}/contents/{path...}", []string{"o", "r", "docs/a b.md"}, []string{"repos", "o", "r", "contents", "docs", "a b.md"}},
	} {
		t.Run(tc.template, func(t *testing.T) {
			r := Route{Template: tc.template}
			if got := r.Segments(tc.values...); !slices.Equal(got, tc.want) {
				t.Fatalf("Segments = %q, want %q", got, tc.want)
			}
			if p := r.ExamplePath(); !r.Matches(p) {
				t.Fatalf("%s does not match its example path %s", tc.template, p)
			}
		})
	}
	for _, values := range [][]string{{"o"}, {"o", "r", "x"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Segments(%q) of a two-parameter route did not panic", values)
				}
			}()
			Route{Template: "/repos/{owner}/{repo}"}.Segments(values...)
		}()
	}
}

// TestRouteShape: a template and a router's pattern of the same route
// have one shape, whatever their parameters are called.
func TestRouteShape(t *testing.T) {
	for _, pair := range [][2]string{
		{"/api/v1/repos/{owner}/{repo}", "/api/v1/repos/{owner}/{repo}/"},
		{"/api/v1/repos/{owner}/{repo}/agent-work-grants/{id}", "/api/v1/repos/{o}/{r}/agent-work-grants/{grant}"},
		{"/api/v1/repos/{owner}/{repo}/pulls/{index}.diff", "/api/v1/repos/{a}/{b}/pulls/{n}.diff"},
		{"/repos/{owner}/{repo}/contents/{path...}", "/repos/{o}/{r}/contents/*"},
	} {
		if RouteShape(pair[0]) != RouteShape(pair[1]) {
			t.Errorf("%s and %s: shapes %s and %s", pair[0], pair[1], RouteShape(pair[0]), RouteShape(pair[1]))
		}
	}
	if RouteShape("/repos/{o}/{r}/pulls/{n}") == RouteShape("/repos/{o}/{r}/pulls/{n}.diff") {
		t.Error("a suffix is part of the shape")
	}
}
