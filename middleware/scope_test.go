package middleware

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// policyMap is a Policies over a fixed map.
type policyMap map[string]ToolPolicy

func (m policyMap) ToolPolicy(name string) (ToolPolicy, bool) { p, ok := m[name]; return p, ok }

var (
	docRead  = Scope{Name: "documents:read", Allows: "read documents"}
	docWrite = Scope{Name: "documents:write", Allows: "write documents"}
	catRead  = Scope{Name: "catalog:read", Allows: "read the catalog"}
)

var testPolicies = policyMap{
	"public_read":  {Anonymous: true},
	"forgejo_diff": {},                         // passthrough: Forgejo enforces scopes
	"doc_get":      {Scopes: []Scope{docRead}}, // gateway-checked
	"doc_admin":    {Scopes: []Scope{docRead, docWrite}, Write: true},
	"cat_list":     {Scopes: []Scope{catRead}},
}

// testChallenge is the endpoint's challenge: its tools' scopes, in order.
var testChallenge = Challenge{ResourceMetadataURL: testMetadataURL, Scopes: []string{"catalog:read", "documents:read", "documents:write"}}

func TestScopeGate(t *testing.T) {
	consent := func(scopes ...string) *Principal {
		return &Principal{Kind: OAuthConsent, Key: "g", Scopes: scopes, ScopesKnown: true}
	}
	passthrough := NewPassthrough("fj-token")
	cases := []struct {
		name      string
		call      Call
		who       *Principal
		want      int
		wantScope string // scope="…" of a 403: the endpoint's scopes held, then those needed
		required  string // required_scopes of a 403: the tool's own
	}{
		{"not a tool call", Call{Method: "tools/list"}, nil, http.StatusOK, "", ""},
		{"anonymous tool, no principal", Call{Method: "tools/call", Tool: "public_read"}, nil, http.StatusOK, "", ""},
		{"unknown tool left to the MCP server", Call{Method: "tools/call", Tool: "nope"}, nil, http.StatusOK, "", ""},
		{"non-anonymous, no principal", Call{Method: "tools/call", Tool: "forgejo_diff"}, nil, http.StatusUnauthorized, "", ""},
		{"scoped, no principal", Call{Method: "tools/call", Tool: "doc_get"}, nil, http.StatusUnauthorized, "", ""},
		{"passthrough, no gateway scopes needed", Call{Method: "tools/call", Tool: "forgejo_diff"}, passthrough, http.StatusOK, "", ""},
		{"passthrough cannot hold gateway scopes", Call{Method: "tools/call", Tool: "doc_get"}, passthrough, http.StatusForbidden, "documents:read", "documents:read"},
		{"consent with the scope", Call{Method: "tools/call", Tool: "doc_get"}, consent("documents:read"), http.StatusOK, "", ""},
		{"consent missing the scope", Call{Method: "tools/call", Tool: "doc_get"}, consent("memory"), http.StatusForbidden, "documents:read", "documents:read"},
		{"consent missing one of two", Call{Method: "tools/call", Tool: "doc_admin"}, consent("documents:read"), http.StatusForbidden, "documents:read documents:write", "documents:read documents:write"},
		{"held scopes named with the needed one", Call{Method: "tools/call", Tool: "cat_list"}, consent("documents:read", "documents:write"), http.StatusForbidden, "documents:read documents:write catalog:read", "catalog:read"},
		{"held scopes the endpoint does not check are not named", Call{Method: "tools/call", Tool: "cat_list"}, consent("memory", "documents:read"), http.StatusForbidden, "documents:read catalog:read", "catalog:read"},
		{"scopes listed but unknown", Call{Method: "tools/call", Tool: "doc_get"}, &Principal{Key: "k", Scopes: []string{"documents:read"}}, http.StatusForbidden, "documents:read", "documents:read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, rec := newReq(http.MethodPost, "/mcp", nil)
			rec.SetCall(tc.call)
			if tc.who != nil {
				r = r.WithContext(WithPrincipal(r.Context(), tc.who))
			}
			next := http.Handler(ok)
			if tc.want != http.StatusOK {
				next = mustNotRun(t)
			}
			w := httptest.NewRecorder()
			ScopeGate(testPolicies, testChallenge)(next).ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status = %d, want %d (%s)", w.Code, tc.want, w.Body.String())
			}
			h := w.Header().Get("WWW-Authenticate")
			switch tc.want {
			case http.StatusUnauthorized:
				if !strings.Contains(h, `resource_metadata="`+testMetadataURL+`"`) {
					t.Errorf("WWW-Authenticate = %q", h)
				}
			case http.StatusForbidden:
				want := `Bearer error="insufficient_scope", scope="` + tc.wantScope + `", resource_metadata="` + testMetadataURL + `"`
				if h != want {
					t.Errorf("WWW-Authenticate = %q\nwant              %q", h, want)
				}
				e := errorBody(t, w.Body.String())
				if e["code"] != "insufficient_scope" {
					t.Errorf("code = %v", e["code"])
				}
				var req []string
				for _, s := range e["required_scopes"].([]any) {
					req = append(req, s.(string))
				}
				if !slices.Equal(req, strings.Fields(tc.required)) {
					t.Errorf("required_scopes = %v", req)
				}
				if rec.Outcome() != "insufficient_scope" {
					t.Errorf("outcome = %q", rec.Outcome())
				}
			default:
				if h != "" {
					t.Errorf("WWW-Authenticate on a pass: %q", h)
				}
			}
		})
	}
}
