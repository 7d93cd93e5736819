package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// Credential hygiene. Every e2e stack registers its secrets as canaries
// (gatewaytest.Canaries) and is scanned when its test ends: the gateway's
// logs, every MCP response its sessions read and its /metrics. These tests
// cover what the stacks alone do not: that the scan really sees tool
// errors, and the secrets of the OAuth token endpoint.

// TestCanaryScanSeesToolErrors is the scan's positive control: a secret a
// caller puts into a request and the gateway echoes back (an unknown
// member's name is quoted in invalid_arguments) is found in the recorded
// responses. The canary set used here is not the stack's, so the stack's
// own scan does not fail on this deliberate echo.
func TestCanaryScanSeesToolErrors(t *testing.T) {
	st := startForgejoStack(t, nil)
	echoed := gatewaytest.NewCanaryToken("echo")
	probe := &gatewaytest.Canaries{}
	probe.Add("a canary the caller sent", echoed)
	s := st.gw.Connect(t, "/mcp/forgejo", "")
	out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": "demo", "repo": "gateway", echoed: 1})
	if !isErr || errorCode(t, out) != "invalid_arguments" {
		t.Fatalf("got %v", out)
	}
	if found := probe.Find(st.gw.Responses()); len(found) == 0 {
		t.Fatal("the recorded responses lack a tool error the client received")
	}
}

// TestCanaryOAuthTokens: the gateway's own OAuth secrets never appear in
// its outputs. A refresh token (the store issues one with every
// authorization_code exchange) presented as a bearer is refused as
// invalid_token, and neither it nor its access token reaches a log, a
// response or /metrics (the stack's canary scan).
//
// Hook for issue 6: when /oauth/authorize and /oauth/token exist, add the
// authorization code and the refresh token each test obtains with
// s.canaries.Add (or AddPattern their shared prefix), and drive
// /oauth/token with a code used twice and a rotated refresh token reused.
func TestCanaryOAuthTokens(t *testing.T) {
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{})
	grant := s.admin(t, "create-grant", "--project-id", s.projectA, "--subject", "alice", "--scopes", "documents:read")
	s.canaries.Add("the admin CLI's access token", grant["access_token"].(string))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, s.dbURL, s.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pair, err := st.IssueTokenPair(ctx, grant["grant_id"].(string), time.Minute, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.canaries.Add("a refresh token", pair.Refresh.Secret)
	s.canaries.Add("the access token of a token pair", pair.Access.Secret)
	endpoint := s.gw.URL + "/mcp/documents"
	resp, body := rawCall(t, endpoint, pair.Refresh.Secret, "runtime_bootstrap_get", map[string]any{})
	s.gw.Record(body)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("a refresh token as a bearer: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	resp, body = rawCall(t, endpoint, pair.Access.Secret, "runtime_bootstrap_get", map[string]any{})
	s.gw.Record(body)
	if resp.StatusCode != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("the pair's access token: %d %s", resp.StatusCode, body)
	}
	cs := s.session(t, pair.Access.Secret)
	if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); isErr {
		t.Fatalf("read with the pair's access token: %v", out)
	}
}
