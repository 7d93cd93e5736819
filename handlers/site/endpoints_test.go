package site

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestUnknownEndpoint: whatever the method, path or body, the answer is
// 404 unknown_endpoint naming both endpoints under public_url, never
// cached, and it repeats nothing of the request.
func TestUnknownEndpoint(t *testing.T) {
	h := UnknownEndpoint("https://gw.example/base")
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`},
		{http.MethodGet, "/mcp", ""},
		{http.MethodDelete, "/mcp/", ""},
		{http.MethodPost, "/mcp/github<script>", `{"jsonrpc":"2.0","id":"echo-me","method":"tools/list"}`},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, "http://gw.example"+strings.ReplaceAll(tc.path, "<", "%3C"), strings.NewReader(tc.body)))
			if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %v", rec.Code, rec.Header())
			}
			var got struct {
				Error struct {
					Code      string
					Message   string
					Endpoints map[string]string
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("%v: %s", err, rec.Body)
			}
			want := map[string]string{"forgejo": "https://gw.example/base/mcp/forgejo", "documents": "https://gw.example/base/mcp/documents"}
			if got.Error.Code != "unknown_endpoint" || !reflect.DeepEqual(got.Error.Endpoints, want) {
				t.Fatalf("body %s", rec.Body)
			}
			for _, url := range want {
				if !strings.Contains(got.Error.Message, url) {
					t.Errorf("the message does not name %s: %s", url, got.Error.Message)
				}
			}
			for _, echo := range []string{"github", "script", "echo-me", "initialize"} {
				if strings.Contains(rec.Body.String(), echo) {
					t.Errorf("the answer repeats %q of the request: %s", echo, rec.Body)
				}
			}
		})
	}
}
