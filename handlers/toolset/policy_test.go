package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// TestAdmit pins the one call-time decision of every policy: which callers
// reach the tool, and the code and details of every refusal.
func TestAdmit(t *testing.T) {
	consent := func(project string, scopes ...string) *middleware.Principal {
		return &middleware.Principal{Kind: middleware.OAuthConsent, Key: "g", ProjectID: project, Scopes: scopes, ScopesKnown: true}
	}
	legacy := &middleware.Principal{Kind: middleware.LegacyProjectToken, ProjectID: "prj_a", Scopes: []string{"documents:read"}, ScopesKnown: true}
	passthrough := middleware.NewPassthrough("fj-token")
	noCred := middleware.NewProcessPrincipal(middleware.Credential{})
	basic := middleware.NewProcessPrincipal(middleware.Credential{Username: "bot", Password: "pw"})
	var (
		anonymous = middleware.ToolPolicy{Anonymous: true}
		bare      = middleware.ToolPolicy{}
		scoped    = middleware.ToolPolicy{Scopes: []middleware.Scope{{Name: "documents:read", Allows: "read documents"}}}
		twoScopes = middleware.ToolPolicy{Scopes: []middleware.Scope{{Name: "catalog:read", Allows: "read"}, {Name: "catalog:dispatch", Allows: "dispatch"}}}
	)
	cases := []struct {
		name   string
		pol    middleware.ToolPolicy
		need   Need
		who    *middleware.Principal
		code   toolerr.Code // "" when admitted
		scopes []string     // required_scopes of a refusal
	}{
		{"anonymous tool, no caller", anonymous, AnyCaller, nil, "", nil},
		{"bare policy leaves the caller to the scope gate", bare, AnyCaller, nil, "", nil},
		{"anonymous tool needing a credential is still anonymous", anonymous, ForgejoCredential, nil, "", nil},
		{"scoped, no caller", scoped, AnyCaller, nil, toolerr.InsufficientScope, []string{"documents:read"}},
		{"scoped, passthrough caller", scoped, AnyCaller, passthrough, toolerr.InsufficientScope, []string{"documents:read"}},
		{"scoped, consent without the scope", scoped, AnyCaller, consent("prj_a"), toolerr.InsufficientScope, []string{"documents:read"}},
		{"scoped, consent with the scope", scoped, AnyCaller, consent("", "documents:read"), "", nil},
		{"two scopes, one held", twoScopes, AnyCaller, consent("prj_a", "catalog:read"), toolerr.InsufficientScope, []string{"catalog:read", "catalog:dispatch"}},
		{"two scopes, both held", twoScopes, AnyCaller, consent("prj_a", "catalog:dispatch", "catalog:read"), "", nil},
		{"project tool, consent of no project", scoped, ProjectConsent, consent("", "documents:read"), toolerr.InsufficientScope, []string{"documents:read"}},
		{"project tool, legacy token with the scope", scoped, ProjectConsent, legacy, toolerr.InsufficientScope, []string{"documents:read"}},
		{"project tool, project consent with the scope", scoped, ProjectConsent, consent("prj_a", "documents:read"), "", nil},
		{"project-only tool, no caller", bare, ProjectConsent, nil, toolerr.InsufficientScope, nil},
		{"project-only tool, project consent", bare, ProjectConsent, consent("prj_a"), "", nil},
		{"forgejo tool, no caller", bare, ForgejoCredential, nil, toolerr.Unauthenticated, nil},
		{"forgejo tool, caller without a credential", bare, ForgejoCredential, noCred, toolerr.Unauthenticated, nil},
		{"forgejo tool, OAuth consent (no Forgejo credential)", bare, ForgejoCredential, consent("prj_a", "documents:read"), toolerr.Unauthenticated, nil},
		{"forgejo tool, bearer", bare, ForgejoCredential, passthrough, "", nil},
		{"forgejo tool, Basic credentials", bare, ForgejoCredential, basic, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.who != nil {
				ctx = middleware.WithPrincipal(ctx, tc.who)
			}
			err := admit(ctx, tc.pol, tc.need)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var te *toolerr.Error
			if !errors.As(err, &te) || te.Code != tc.code {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
			got, _ := te.Details["required_scopes"].([]string)
			if !slices.Equal(got, tc.scopes) {
				t.Fatalf("required_scopes = %v, want %v", te.Details["required_scopes"], tc.scopes)
			}
		})
	}
	// The refusal's details are a copy: changing them leaves the policy be.
	err := admit(context.Background(), scoped, AnyCaller)
	var te *toolerr.Error
	errors.As(err, &te)
	te.Details["required_scopes"].([]string)[0] = "changed"
	if scoped.Scopes[0].Name != "documents:read" {
		t.Fatal("the refusal shares the policy's scope slice")
	}
}

// TestTypedOrder: arguments are decoded first, then an unavailable tool
// refuses, then the policy; the tool runs only past all three.
func TestTypedOrder(t *testing.T) {
	ran := 0
	unconfigured := toolerr.New(toolerr.UpstreamUnconfigured, "no upstream")
	mk := func(unavailable error) Tool {
		return Typed(Tool{Name: "t", Needs: ForgejoCredential, Unavailable: unavailable},
			func(context.Context, echoArgs) (any, error) { ran++; return "ran", nil })
	}
	authed := middleware.WithPrincipal(context.Background(), middleware.NewPassthrough("tok"))
	cases := []struct {
		name string
		tool Tool
		ctx  context.Context
		raw  string
		code toolerr.Code
	}{
		{"bad arguments before unavailable", mk(unconfigured), context.Background(), `{"text":1}`, toolerr.InvalidArguments},
		{"unavailable before the policy", mk(unconfigured), context.Background(), `{"text":"x"}`, toolerr.UpstreamUnconfigured},
		{"unavailable with an admitted caller", mk(unconfigured), authed, `{"text":"x"}`, toolerr.UpstreamUnconfigured},
		{"bad arguments before the policy", mk(nil), context.Background(), `{}`, toolerr.InvalidArguments},
		{"policy refuses", mk(nil), context.Background(), `{"text":"x"}`, toolerr.Unauthenticated},
		{"admitted", mk(nil), authed, `{"text":"x"}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := ran
			out, err := tc.tool.Handle(tc.ctx, json.RawMessage(tc.raw))
			if tc.code == "" {
				if err != nil || out != "ran" || ran != before+1 {
					t.Fatalf("out %v err %v, ran %d times", out, err, ran-before)
				}
				return
			}
			if te := toolerr.As(err); te.Code != tc.code || ran != before {
				t.Fatalf("err = %v, want %s; ran %d times", err, tc.code, ran-before)
			}
		})
	}
}

// TestNewRefusesUnenforcedPolicy: a tool whose policy asks for a caller
// must come from Typed, or nothing would enforce the policy.
func TestNewRefusesUnenforcedPolicy(t *testing.T) {
	handle := func(context.Context, json.RawMessage) (any, error) { return "ran", nil }
	cases := []struct {
		name  string
		tool  Tool
		panic bool
	}{
		{"hand-built anonymous", Tool{Name: "a", Policy: middleware.ToolPolicy{Anonymous: true}, Handle: handle}, false},
		{"hand-built bare", Tool{Name: "a", Handle: handle}, false},
		{"hand-built scoped", Tool{Name: "a", Policy: middleware.ToolPolicy{Scopes: []middleware.Scope{{Name: "s", Allows: "s"}}}, Handle: handle}, true},
		{"hand-built project", Tool{Name: "a", Needs: ProjectConsent, Handle: handle}, true},
		{"hand-built forgejo", Tool{Name: "a", Needs: ForgejoCredential, Handle: handle}, true},
		{"typed scoped", Typed(Tool{Name: "a", Policy: middleware.ToolPolicy{Scopes: []middleware.Scope{{Name: "s", Allows: "s"}}}},
			func(context.Context, echoArgs) (any, error) { return nil, nil }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if got := recover() != nil; got != tc.panic {
					t.Fatalf("panicked %v, want %v", got, tc.panic)
				}
			}()
			New("c", "v0", "", tc.tool)
		})
	}
}
