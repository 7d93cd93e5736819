package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestReadyzListsUpstreams starts the real binary with no Forgejo origin,
// GitHub App or OpenID provider: /readyz stays ready (200) and lists each
// upstream's state, and the start log says which endpoints are usable.
// With a Forgejo origin configured, forgejo turns configured.
func TestReadyzListsUpstreams(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		forgejo string
		logged  string
	}{
		{"nothing configured", nil, "unconfigured", "unusable: no forgejo.origin"},
		{"a Forgejo origin", map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": "http://127.0.0.1:1"}, "configured", "usable: Forgejo at forgejo.origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := gatewaytest.Start(t, gatewaytest.Options{Env: tc.env})
			code, body := get(t, gw.URL+"/readyz")
			var got struct {
				Status    string            `json:"status"`
				Upstreams map[string]string `json:"upstreams"`
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 || got.Status != "ready" {
				t.Fatalf("/readyz: %d %s (%v)", code, body, err)
			}
			want := map[string]string{"forgejo": tc.forgejo, "github": "unconfigured", "oidc": "unconfigured", "store": "ok", "redis": "unconfigured"}
			for k, v := range want {
				if got.Upstreams[k] != v {
					t.Errorf("upstreams[%s] = %q, want %q: %s", k, got.Upstreams[k], v, body)
				}
			}
			logs := gw.Logs()
			for _, l := range []string{`"msg":"endpoints"`, tc.logged, "no GitHub App", "no oidc.issuer"} {
				if !strings.Contains(logs, l) {
					t.Errorf("the start log lacks %q:\n%s", l, logs)
				}
			}
		})
	}
}
