package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// TestRefusalsFollowTheCodeTable: the real binary's middleware refusals
// carry the HTTP status and, for a JSON-RPC call, the JSON-RPC error code
// that toolerr's one table gives their code, which docs/tools.md's Error
// codes table repeats (a unit test holds the document to the table).
func TestRefusalsFollowTheCodeTable(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "2"})
	forgejo, documents := st.gw.URL+"/mcp/forgejo", st.gw.URL+"/mcp/documents"
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	cases := []struct {
		name    string
		url     string
		body    string
		headers map[string]string
		code    toolerr.Code
		rpc     bool // answered as a JSON-RPC error (the call's id was read)
	}{
		{"a body over 1 MiB", forgejo, list + strings.Repeat(" ", 1<<20), nil, toolerr.BodyTooLarge, false},
		{"an id the gateway cannot echo", forgejo, `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, nil, toolerr.InvalidRequest, true},
		{"a batch", forgejo, "[" + list + "]", nil, toolerr.InvalidArguments, false},
		{"a foreign browser origin", forgejo, list, map[string]string{"Origin": "https://evil.example"}, toolerr.OriginForbidden, false},
		{"no bearer where one is needed", documents, list, nil, toolerr.Unauthenticated, true},
		{"no MCP endpoint at /mcp", st.gw.URL + "/mcp", list, nil, toolerr.UnknownEndpoint, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, out := postRPC(t, tc.url, tc.body, tc.headers)
			wantTableRefusal(t, resp, out, tc.code, tc.rpc)
		})
	}
	t.Run("a spent read budget", func(t *testing.T) {
		var resp *http.Response
		var out string
		for range 3 {
			resp, out = postRPC(t, forgejo, list, nil)
		}
		wantTableRefusal(t, resp, out, toolerr.RateLimited, true)
	})
}

// wantTableRefusal checks one refusal against the table: the status, and either
// the JSON-RPC error (its code, and the stable code in data) or the plain
// {"error":{"code":…}} body.
func wantTableRefusal(t *testing.T, resp *http.Response, out string, code toolerr.Code, rpc bool) {
	t.Helper()
	if resp.StatusCode != code.HTTPStatus() {
		t.Fatalf("HTTP %d, want %d for %s: %s", resp.StatusCode, code.HTTPStatus(), code, out)
	}
	var body struct {
		JSONRPC string          `json:"jsonrpc"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("body %q: %v", out, err)
	}
	if !rpc {
		var e struct{ Code toolerr.Code }
		if body.JSONRPC != "" || json.Unmarshal(body.Error, &e) != nil || e.Code != code {
			t.Fatalf("want the plain error body with %s: %s", code, out)
		}
		return
	}
	var e struct {
		Code int
		Data struct{ Code toolerr.Code }
	}
	if body.JSONRPC != "2.0" || json.Unmarshal(body.Error, &e) != nil || e.Code != code.RPCCode() || e.Data.Code != code {
		t.Fatalf("want a JSON-RPC error %d with data.code %s: %s", code.RPCCode(), code, out)
	}
}
