package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
)

// extraScope is a scope no tool of the gateway has: the test adds a tool
// that needs it, and every scope list must follow.
var extraScope = middleware.Scope{Name: "zeta:write", Allows: "write the zeta of the project"}

// withExtraTool is c with one more tool, which needs extraScope.
func withExtraTool(c *toolset.Toolset) *toolset.Toolset {
	extra := toolset.Typed(toolset.Tool{Name: "zeta_write", Description: "Write the zeta.",
		Policy: middleware.ToolPolicy{Scopes: []middleware.Scope{extraScope}}, Needs: toolset.ProjectConsent},
		func(context.Context, struct{}) (any, error) { return map[string]string{"zeta": "written"}, nil })
	return toolset.New(c.Name, c.Version, c.Instructions, append(c.Tools(), extra)...)
}

// TestEveryScopeListFollowsTheTools: the documents endpoint's tools are
// the one owner of its scopes. A gateway whose toolset gains a tool with a
// new scope names that scope, with the tools' other scopes, everywhere a
// scope is listed — the 401 challenge, the protected-resource metadata,
// the authorization server's metadata and consent text, the landing page
// — and a 403 for it names the scopes held with the one needed. The admin
// CLI's known scopes are those of the toolset the gateway serves.
func TestEveryScopeListFollowsTheTools(t *testing.T) {
	cfg := Default()
	cfg.DataDir = t.TempDir()
	cfg.PublicURL = "http://127.0.0.1:8080"
	cfg.OIDCIssuer, cfg.OIDCClientID = "http://127.0.0.1:1", "gw"
	g, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got, want := documentsScopes(), g.documentsC.ScopeNames(); !slices.Equal(got, want) || len(want) < 3 {
		t.Fatalf("the admin CLI knows %v, the documents endpoint checks %v", got, want)
	}

	// The same wiring, from a toolset with one more scoped tool.
	g.documentsC = withExtraTool(g.documentsC)
	g.registry, g.storeRegistry = prometheus.NewRegistry(), prometheus.NewRegistry()
	if err := g.wireOAuth(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	want := g.documentsC.ScopeNames()
	if !slices.Contains(want, extraScope.Name) {
		t.Fatalf("the toolset's scopes %v lack the new tool's", want)
	}

	t.Run("401 challenge", func(t *testing.T) {
		resp := post(t, srv.URL+"/mcp/documents", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		wa := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(wa, `scope="`+strings.Join(want, " ")+`"`) {
			t.Fatalf("%d WWW-Authenticate %q, want scope %q", resp.StatusCode, wa, want)
		}
	})
	for name, path := range map[string]string{
		"protected-resource metadata":   "/.well-known/oauth-protected-resource/mcp/documents",
		"authorization server metadata": "/.well-known/oauth-authorization-server",
	} {
		t.Run(name, func(t *testing.T) {
			var md struct {
				Scopes []string `json:"scopes_supported"`
			}
			get(t, srv.URL+path, http.StatusOK, &md)
			if !slices.Equal(md.Scopes, want) {
				t.Fatalf("scopes_supported %v, want %v", md.Scopes, want)
			}
		})
	}
	t.Run("consent text", func(t *testing.T) {
		for _, s := range toolsetScopes(g.documentsC) {
			if s.Name == extraScope.Name && s.Description != extraScope.Allows+" (tools: zeta_write)" {
				t.Fatalf("consent text of %s: %q", s.Name, s.Description)
			}
		}
	})
	t.Run("landing page", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "("+strings.Join(want, ", ")+")") {
			t.Fatalf("the landing page does not list %v:\n%s", want, body)
		}
	})
	t.Run("403 names the scopes held and the one needed", func(t *testing.T) {
		ctx := context.Background()
		p, err := g.store.CreateProject(ctx, "", "p")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.store.AddMember(ctx, p.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		gr, err := g.store.CreateConsent(ctx, p.ID, "alice", "test", []string{"documents:read", "workflow:dispatch", "memory"})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := g.store.IssueAccessToken(ctx, gr.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		resp := post(t, srv.URL+"/mcp/documents", tok.Secret, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"zeta_write","arguments":{}}}`)
		wa := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(wa, `scope="documents:read workflow:dispatch zeta:write"`) {
			t.Fatalf("%d WWW-Authenticate %q", resp.StatusCode, wa)
		}
	})
}

// post sends one JSON-RPC message, with bearer when given, and returns the
// response with its body read.
func post(t *testing.T, url, bearer, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var discard json.RawMessage
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&discard)
	resp.Body.Close()
	return resp
}
