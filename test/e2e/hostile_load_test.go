package e2e

import (
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// The hostile-load tests through the real binary (issue 13): what an
// unauthenticated caller can make the gateway hold or spend, and the
// gateway's own tokens sent to the wrong endpoint.

// TestHostileLoadGatewayTokensNotForwarded: every gateway token (access,
// refresh, legacy) sent to /mcp/forgejo is 401 invalid_token, on an
// authenticated tool and on an anonymous one, and the Forgejo origin sees
// no request at all; the log names the refused token by its hash only.
func TestHostileLoadGatewayTokensNotForwarded(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	st.emu.ResetRequests()
	calls := map[string]string{
		"authenticated tool": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PrivateRepo + `","index":1}}}`,
		"anonymous tool":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PublicRepo + `"}}}`,
		"tools/list":         `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	}
	for _, prefix := range []string{"agw_at_", "agw_rt_", "agw_lt_", "AGW_AT_"} {
		token := prefix + randomHex(t)
		st.canaries.Add("a gateway token sent to /mcp/forgejo", token)
		for what, body := range calls {
			t.Run(prefix+" "+what, func(t *testing.T) {
				resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", body, map[string]string{"Authorization": "Bearer " + token})
				st.gw.Record(out)
				if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
					t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), out)
				}
			})
		}
		if !strings.Contains(st.gw.Logs(), `"caller":"refused:`+middleware.CredentialHash(token)+`"`) {
			t.Errorf("the refusal of %s… is not logged under the token's hash", prefix)
		}
	}
	for _, r := range st.emu.Requests() {
		t.Errorf("a gateway token's call reached Forgejo: %s %s", r.Method, r.Path)
	}
}
