package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// TestReadyz pins /readyz: ready without any upstream configured, each
// upstream's state in the body, 503 only when the store does not answer.
func TestReadyz(t *testing.T) {
	keyFile := rsaKeyFile(t)
	for _, tc := range []struct {
		name       string
		configure  func(*Config)
		closeStore bool
		status     int
		want       map[string]string
		logs       []string
	}{
		{"zero config", func(*Config) {}, false, http.StatusOK,
			map[string]string{"forgejo": "unconfigured", "github": "unconfigured", "oidc": "unconfigured", "redis": "unconfigured", "store": "ok"},
			[]string{"no forgejo.origin", "no GitHub App", "no oidc.issuer"}},
		{"GitHub App without its key", func(c *Config) { c.GitHubAppID = 1 }, false, http.StatusOK,
			map[string]string{"forgejo": "unconfigured", "github": "unconfigured", "oidc": "unconfigured", "redis": "unconfigured", "store": "ok"},
			[]string{"no GitHub App"}},
		{"every upstream", func(c *Config) {
			c.ForgejoOrigin, _ = upstream.ParseOrigin("http://127.0.0.1:1")
			c.GitHubAppID, c.GitHubAppKeyFile = 1, keyFile
			c.OIDCIssuer, c.OIDCClientID = "http://127.0.0.1:1", "gw"
		}, false, http.StatusOK,
			map[string]string{"forgejo": "configured", "github": "configured", "oidc": "configured", "redis": "unconfigured", "store": "ok"},
			[]string{"usable: Forgejo at forgejo.origin", "usable: document and catalog reads", "usable: login at oidc.issuer"}},
		{"store down", func(*Config) {}, true, http.StatusServiceUnavailable,
			map[string]string{"forgejo": "unconfigured", "github": "unconfigured", "oidc": "unconfigured", "redis": "unconfigured", "store": "unavailable"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			cfg.DataDir = t.TempDir()
			cfg.PublicURL = "http://127.0.0.1:8080"
			tc.configure(&cfg)
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			g, err := New(context.Background(), cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			g.logUsableEndpoints(log)
			for _, l := range tc.logs {
				if !strings.Contains(logs.String(), l) {
					t.Errorf("the start log lacks %q:\n%s", l, logs.String())
				}
			}
			if tc.closeStore {
				_ = g.store.Close()
			}
			srv := httptest.NewServer(g.Handler())
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			var body readyzBody
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("%d %s: %v", resp.StatusCode, raw, err)
			}
			wantStatus := map[int]string{http.StatusOK: "ready", http.StatusServiceUnavailable: "unavailable"}[tc.status]
			if resp.StatusCode != tc.status || body.Status != wantStatus {
				t.Fatalf("/readyz = %d %s, want %d %s", resp.StatusCode, raw, tc.status, wantStatus)
			}
			if len(body.Upstreams) != len(tc.want) {
				t.Errorf("upstreams %v, want %v", body.Upstreams, tc.want)
			}
			for k, v := range tc.want {
				if body.Upstreams[k] != v {
					t.Errorf("upstreams[%s] = %q, want %q (%s)", k, body.Upstreams[k], v, raw)
				}
			}
			if strings.Contains(string(raw), "127.0.0.1") {
				t.Errorf("/readyz names an origin: %s", raw)
			}
		})
	}
}
