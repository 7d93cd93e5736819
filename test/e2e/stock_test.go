package e2e

import (
	"strings"
	"testing"
)

// TestStockForge: in front of a forge without Core's extensions
// — the evidence URL answers 200 text/plain with a plain diff, the grant
// routes 404 text/plain "404 page not found", as a real Gitea 1.27.3 does —
// each tool says forge_unsupported and names the missing extension, rather
// than evidence_framing (a broken proxy) or not_found (no such grant). A
// write is refused as definitely not committed, not delivery_uncertain.
// The anonymous reads are unaffected, and Core's own JSON 404 stays
// not_found.
func TestStockForge(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	p := addPullWithFiles(t, st.emu, d.Owner, d.PublicRepo, "topic/stock", mixedFiles())
	g := prepare(t, st, d.PublicRepo, "a task for a stock forge")
	reader := st.gw.Connect(t, "/mcp/forgejo", d.ReaderToken)
	bot := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)

	st.emu.SetStock(true)
	cases := []struct {
		name      string
		tool      string
		args      map[string]any
		extension string
	}{
		{"diff", diffTool, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": p.Index()}, "diff_evidence.v1"},
		{"list grants", "list_agent_work_grants", map[string]any{}, "agent_work_grants"},
		{"get grant", "get_agent_work_grant", ref(g), "agent_work_grants"},
		{"confirm", "confirm_agent_work_grant", withTriple(g), "agent_work_grants"},
		{"submit", "submit_agent_work_proposal", submitArgs(g, newKey(t), "title", "body"), "agent_work_grants"},
		{"readback", "get_agent_work_submission", keyArgs(g, newKey(t)), "agent_work_grants"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := bot
			if c.tool == diffTool {
				s = reader
			}
			out, isErr := callTool(t, s, c.tool, c.args)
			e := errorObj(t, out)
			if !isErr || e["code"] != "forge_unsupported" || e["extension"] != c.extension || e["native_status"] == nil {
				t.Fatalf("%s on a stock forge: %v", c.tool, out)
			}
			if msg := e["message"].(string); strings.Contains(msg, "404 page not found") || strings.Contains(msg, "diff --git") {
				t.Fatalf("the message quotes the upstream body: %s", msg)
			}
		})
	}
	// Each write was sent once and not retried.
	if n := st.emu.GrantPosts(); n.Confirm != 1 || n.Submit != 1 {
		t.Fatalf("grant POSTs on a stock forge: %+v", n)
	}
	t.Run("anonymous reads unaffected", func(t *testing.T) {
		out, isErr := callTool(t, st.gw.Connect(t, "/mcp/forgejo", ""), "get_repository", map[string]any{"owner": d.Owner, "repo": d.PublicRepo})
		if isErr || out["name"] != d.PublicRepo {
			t.Fatalf("get_repository on a stock forge: %v", out)
		}
	})

	st.emu.SetStock(false)
	t.Run("Core's JSON 404 stays not_found", func(t *testing.T) {
		missing := ref(g)
		missing["grant_id"] = g.ID + 1000
		out, isErr := callTool(t, bot, "get_agent_work_grant", missing)
		wantRefusal(t, out, isErr, "not_found", 404)
		out, _ = callTool(t, reader, diffTool, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": 9999})
		if errorCode(t, out) != "not_found" {
			t.Fatalf("missing pull request: %v", out)
		}
	})
	t.Run("Core answers again", func(t *testing.T) {
		out, isErr := callTool(t, bot, "get_agent_work_grant", ref(g))
		if isErr || obj(t, out, "grant")["state"] != "awaiting_agent" {
			t.Fatalf("the grant after the stock forge: %v", out)
		}
		pg, out := callDiff(t, reader, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": p.Index()})
		if pg == nil {
			t.Fatalf("Core's evidence after the stock forge: %v", out)
		}
	})
}
