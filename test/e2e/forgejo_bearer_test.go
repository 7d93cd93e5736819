package e2e

import (
	"slices"
	"testing"
)

// TestForgejoBearerCheckedOnUse pins what README's "Connect an agent" and
// docs/tools.md tell a user about a wrong Forgejo token: the gateway does
// not verify the bearer when a client connects (initialize and tools/list
// send nothing to Forgejo, so `claude mcp list` shows the server
// connected), the anonymous tools work whatever the bearer, and the first
// authenticated call answers upstream_unauthorized. A good token reads
// the same grant; revoked, it is refused on the next call.
func TestForgejoBearerCheckedOnUse(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	repo := map[string]any{"owner": d.Owner, "repo": d.PublicRepo}
	for _, tc := range []struct {
		name, bearer string
		revoke       bool
		code         string // of the authenticated call; empty: it succeeds
	}{
		{"a token Forgejo does not know", "not-a-forgejo-token", false, "upstream_unauthorized"},
		{"a good token", d.ReaderToken, false, ""},
		{"a token revoked after connecting", d.BotToken, true, "upstream_unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.emu.ResetRequests()
			s := st.gw.Connect(t, "/mcp/forgejo", tc.bearer)
			if names := toolNames(t, s); !slices.Contains(names, "list_agent_work_grants") || !slices.Contains(names, "get_pull_request_diff") {
				t.Fatalf("with a bearer, tools/list = %v", names)
			}
			if n := len(st.emu.Requests()); n != 0 {
				t.Fatalf("connecting and listing tools sent %d requests to Forgejo, want none", n)
			}
			if out, isErr := callTool(t, s, "get_repository", repo); isErr || out["name"] != d.PublicRepo {
				t.Fatalf("an anonymous tool with this bearer: %v", out)
			}
			if tc.revoke {
				st.emu.RevokeToken(tc.bearer)
			}
			out, isErr := callTool(t, s, "list_agent_work_grants", map[string]any{})
			switch {
			case tc.code == "" && isErr:
				t.Fatalf("list_agent_work_grants with a good token: %v", out)
			case tc.code != "" && (!isErr || errorCode(t, out) != tc.code):
				t.Fatalf("list_agent_work_grants: %v, want %s", out, tc.code)
			}
		})
	}
}
