package site

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"
)

func TestResourceMetadata(t *testing.T) {
	scopes := []string{"documents:read"}
	forge := &url.URL{Scheme: "https", Host: "forge.example"}
	for _, tc := range []struct {
		name string
		h    http.Handler
		want map[string]any
	}{
		{"forgejo with an origin", ForgejoResource("https://gw.example", forge), map[string]any{
			"resource": "https://gw.example/mcp/forgejo", "bearer_methods_supported": []any{"header"},
			"scopes_supported": []any{"read:repository", "write:issue"}, "resource_name": "agent-gateway Forgejo tools",
			"authorization_servers": []any{"https://forge.example"},
		}},
		{"forgejo without an origin names no server", ForgejoResource("https://gw.example", nil), map[string]any{
			"resource": "https://gw.example/mcp/forgejo", "bearer_methods_supported": []any{"header"},
			"scopes_supported": []any{"read:repository", "write:issue"}, "resource_name": "agent-gateway Forgejo tools",
		}},
		{"documents", DocumentsResource("https://gw.example", func() []string { return scopes }), map[string]any{
			"resource": "https://gw.example/mcp/documents", "authorization_servers": []any{"https://gw.example"},
			"bearer_methods_supported": []any{"header"}, "scopes_supported": []any{"documents:read", "catalog:read"},
			"resource_name": "agent-gateway project documents", "resource_documentation": "https://gw.example/",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The scopes are read per request, not when the handler is built.
			scopes = []string{"documents:read", "catalog:read"}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %v", rec.Code, rec.Header())
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("metadata %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}
