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

	"github.com/agent-gateway/agent-gateway/handlers/documents"
	"github.com/agent-gateway/agent-gateway/handlers/instructions"
)

// TestLoadOIDC checks the oidc.* keys, alone and together.
func TestLoadOIDC(t *testing.T) {
	secretFile := writeFile(t, "oidc.secret", "s3cret\n")
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string // a problem that must be reported; "" for none
	}{
		{"unset", nil, ""},
		{"complete", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example/realms/x", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw", "AGENT_GATEWAY_OIDC_CLIENT_SECRET": "s"}, ""},
		{"loopback http", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "http://127.0.0.1:5556", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw"}, ""},
		{"secret file", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw", "AGENT_GATEWAY_OIDC_CLIENT_SECRET_FILE": secretFile}, ""},
		{"plain http", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "http://idp.example", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw"}, "oidc.issuer (AGENT_GATEWAY_OIDC_ISSUER)"},
		{"query", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example/?x=1", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw"}, "oidc.issuer"},
		{"issuer without client", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example"}, "oidc.client_id: required"},
		{"client without issuer", map[string]string{"AGENT_GATEWAY_OIDC_CLIENT_ID": "gw"}, "oidc.issuer: required"},
		{"both secrets", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw", "AGENT_GATEWAY_OIDC_CLIENT_SECRET": "s", "AGENT_GATEWAY_OIDC_CLIENT_SECRET_FILE": secretFile}, "set one, not both"},
		{"missing secret file", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw", "AGENT_GATEWAY_OIDC_CLIENT_SECRET_FILE": "/nonexistent/secret"}, "oidc.client_secret_file"},
		{"no openid scope", map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw", "AGENT_GATEWAY_OIDC_SCOPES": "profile email"}, "oidc.scopes: must include openid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := load(t, nil, tc.vars)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(l.Config.OIDCScopes, "openid") {
					t.Errorf("scopes %q", l.Config.OIDCScopes)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	if _, err := load(t, []string{"--config", writeFile(t, "c.yaml", "oidc:\n  client_secret: x\n")}, nil); err == nil ||
		!strings.Contains(err.Error(), "AGENT_GATEWAY_OIDC_CLIENT_SECRET") {
		t.Fatalf("a client secret in YAML must be refused: %v", err)
	}
}

// TestDocumentsMetadataFollowsOAuth: the documents endpoint's resource
// metadata names this gateway as authorization server and lists the
// toolset's scopes; the authorization server's metadata answers 503 until
// an identity provider is configured.
func TestDocumentsMetadataFollowsOAuth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		issuer string
	}{{"unconfigured", ""}, {"configured", "http://127.0.0.1:1"}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			cfg.DataDir = t.TempDir()
			cfg.PublicURL = "http://127.0.0.1:8080"
			cfg.OIDCIssuer, cfg.OIDCClientID = tc.issuer, "gw"
			g, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			srv := httptest.NewServer(g.Handler())
			defer srv.Close()
			var md map[string]any
			get(t, srv.URL+"/.well-known/oauth-protected-resource/mcp/documents", http.StatusOK, &md)
			if as, _ := md["authorization_servers"].([]any); len(as) != 1 || as[0] != cfg.PublicURL {
				t.Fatalf("authorization_servers %v", md["authorization_servers"])
			}
			if sc, _ := md["scopes_supported"].([]any); !slices.Contains(sc, any("documents:read")) || !slices.Contains(sc, any("workflow:dispatch")) {
				t.Fatalf("scopes_supported %v", md["scopes_supported"])
			}
			want := http.StatusServiceUnavailable
			if tc.issuer != "" {
				want = http.StatusOK
			}
			get(t, srv.URL+"/.well-known/oauth-authorization-server", want, &md)
			if tc.issuer != "" && md["issuer"] != cfg.PublicURL {
				t.Fatalf("issuer %v", md["issuer"])
			}
		})
	}
}

// TestToolsetScopes: the scopes the consent page offers come from the
// documents endpoint's tool policies, each naming the tools it opens.
func TestToolsetScopes(t *testing.T) {
	scopes := toolsetScopes(documentsToolset(documents.Options{}, instructions.Options{}))
	byName := map[string]string{}
	for _, s := range scopes {
		byName[s.Name] = s.Description
	}
	want := map[string][]string{
		"documents:read":    {"runtime_bootstrap_get", "git_document_get"},
		"catalog:read":      {"catalog_profiles_list", "catalog_profile_get", "workflow_get"},
		"workflow:dispatch": {"workflow_dispatch"},
	}
	if len(byName) != len(want) {
		t.Fatalf("scopes %+v", scopes)
	}
	for name, tools := range want {
		for _, tool := range tools {
			if !strings.Contains(byName[name], tool) {
				t.Fatalf("scope %s does not name %s: %+v", name, tool, scopes)
			}
		}
	}
}

func get(t *testing.T, url string, status int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
