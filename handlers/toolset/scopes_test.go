package toolset

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
)

func scopedTool(name string, scopes ...middleware.Scope) Tool {
	return Typed(Tool{Name: name, Policy: middleware.ToolPolicy{Scopes: scopes}},
		func(context.Context, struct{}) (any, error) { return nil, nil })
}

// TestToolsetScopes: a toolset's scopes are its tools' scopes, sorted by
// name, once each, with the tools that need them in toolset order.
func TestToolsetScopes(t *testing.T) {
	read := middleware.Scope{Name: "docs:read", Allows: "read"}
	write := middleware.Scope{Name: "docs:write", Allows: "write"}
	admin := middleware.Scope{Name: "admin", Allows: "administer"}
	c := New("t", "v", "",
		scopedTool("b_write", write, read),
		Typed(Tool{Name: "public", Policy: middleware.ToolPolicy{Anonymous: true}}, func(context.Context, struct{}) (any, error) { return nil, nil }),
		scopedTool("a_read", read),
		scopedTool("z_admin", admin),
	)
	got := fmt.Sprint(c.Scopes())
	want := fmt.Sprint([]ScopeUse{
		{Scope: admin, Tools: []string{"z_admin"}},
		{Scope: read, Tools: []string{"b_write", "a_read"}},
		{Scope: write, Tools: []string{"b_write"}},
	})
	if got != want {
		t.Fatalf("Scopes() = %s\nwant       %s", got, want)
	}
	if names := c.ScopeNames(); !slices.Equal(names, []string{"admin", "docs:read", "docs:write"}) {
		t.Fatalf("ScopeNames() = %v", names)
	}
	if n := New("t", "v", "", testTools(map[string]int{})[:2]...).ScopeNames(); len(n) != 0 {
		t.Fatalf("a toolset without scoped tools has scopes %v", n)
	}
}

// TestToolsetRefusesUndescribedScopes: a scope that does not say what it
// allows, or that two tools describe differently, is a wiring mistake.
func TestToolsetRefusesUndescribedScopes(t *testing.T) {
	for name, tools := range map[string][]Tool{
		"no description": {scopedTool("a", middleware.Scope{Name: "docs:read"})},
		"no name":        {scopedTool("a", middleware.Scope{Allows: "read"})},
		"two descriptions": {
			scopedTool("a", middleware.Scope{Name: "docs:read", Allows: "read"}),
			scopedTool("b", middleware.Scope{Name: "docs:read", Allows: "read it all"}),
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("New accepted it")
				}
			}()
			New("t", "v", "", tools...)
		})
	}
}
