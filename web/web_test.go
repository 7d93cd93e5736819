package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRenderFormTargets: the consent page's form-action lists 'self' and
// the targets it is given, and a target that could carry another directive
// or source (space, ';', ',', quote, wildcard) is left out.
func TestRenderFormTargets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []string
		want    string
	}{
		{"none", nil, "form-action 'self';"},
		{"an origin", []string{"http://127.0.0.1:33418"}, "form-action 'self' http://127.0.0.1:33418;"},
		{"a scheme", []string{"cursor:"}, "form-action 'self' cursor:;"},
		{"an IPv6 origin", []string{"http://[::1]:9"}, "form-action 'self' http://[::1]:9;"},
		{"a directive smuggled in", []string{"https://a.example; script-src *"}, "form-action 'self';"},
		{"two sources in one", []string{"https://a.example https://b.example"}, "form-action 'self';"},
		{"a keyword", []string{"'unsafe-inline'"}, "form-action 'self';"},
		{"a wildcard", []string{"*"}, "form-action 'self';"},
		{"a comma", []string{"https://a.example,https://b.example"}, "form-action 'self';"},
		{"empty", []string{""}, "form-action 'self';"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			RenderForm(w, 200, "oauth_error.html", OAuthError{Title: "t", Message: "m"}, tc.targets...)
			csp := w.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, tc.want) || strings.Count(csp, ";") != 5 {
				t.Fatalf("CSP %q, want %q in six directives", csp, tc.want)
			}
		})
	}
}
