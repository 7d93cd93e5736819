package toolset

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// fakeAuditor keeps the calls it is given and answers err.
type fakeAuditor struct {
	calls []audit.Call
	err   error
}

func (f *fakeAuditor) Record(ctx context.Context, c audit.Call) error {
	f.calls = append(f.calls, c)
	return f.err
}

// TestAuditedCalls: every answered call reaches the auditor with its
// outcome and the exact text answered; a refusal with no text; and an
// auditor that refuses (audit.mode required, queue full) turns the
// answer into audit_unavailable, with nothing of the result in it.
func TestAuditedCalls(t *testing.T) {
	var slotSeen bool
	tool := Typed(Tool{Name: "forge_private", Description: "Needs a bearer."},
		func(ctx context.Context, in echoArgs) (any, error) {
			audit.SetDiff(ctx, audit.DiffEvidence{ChunkBytes: 3})
			slotSeen = true
			if in.Text == "fail" {
				return nil, toolerr.New(toolerr.NotFound, "no such thing")
			}
			return []string{in.Text}, nil
		})
	call := func(a Auditor, text string) (*mcp.CallToolResult, *middleware.Record) {
		res, _, rec := bearerCall(t, tool, a, text, false)
		return res, rec
	}

	a := &fakeAuditor{}
	res, _ := call(a, "payload")
	if res.IsError || len(a.calls) != 1 {
		t.Fatalf("answer %+v, %d calls recorded", res, len(a.calls))
	}
	got := a.calls[0]
	if got.Toolset != "test" || got.Tool != "forge_private" || got.Outcome != "ok" || got.Result == nil ||
		got.Result() != res.Content[0].(*mcp.TextContent).Text || string(got.Args) != `{"text":"payload"}` {
		t.Fatalf("recorded %+v", got)
	}

	res, _ = call(a, "fail")
	if !res.IsError || len(a.calls) != 2 || a.calls[1].Outcome != "not_found" || a.calls[1].Result != nil {
		t.Fatalf("refusal recorded as %+v", a.calls[1])
	}

	refusing := &fakeAuditor{err: toolerr.New(toolerr.AuditUnavailable, "full")}
	res, rec := call(refusing, "payload")
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || rec.Outcome() != "audit_unavailable" || !json.Valid([]byte(text)) ||
		toolerr.As(refusing.err).Code != "audit_unavailable" || strings.Contains(text, "payload") {
		t.Fatalf("answer %s (outcome %s), want audit_unavailable and no result", text, rec.Outcome())
	}
	if !slotSeen {
		t.Fatal("the tool never ran")
	}

	// Without an auditor nothing changes.
	res, rec = call(nil, "payload")
	if res.IsError || rec.Outcome() != "ok" {
		t.Fatalf("unaudited call: %+v", res)
	}
}

// bearerCall runs tool for a Forgejo bearer, with text as its argument,
// in a toolset audited by a (nil: none), as the SDK runs it or, with
// fuse, as the owned path does.
func bearerCall(t *testing.T, tool Tool, a Auditor, text string, fuse bool) (*mcp.CallToolResult, JSONStringAppender, *middleware.Record) {
	t.Helper()
	rec := &middleware.Record{}
	ctx := middleware.WithPrincipal(middleware.WithRecord(t.Context(), rec), middleware.NewPassthrough("tok"))
	c := New("test", "v0", "", tool)
	c.SetAuditor(a)
	args, _ := json.Marshal(echoArgs{Text: text})
	res, fused := c.call(ctx, tool, nil, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: args}}, fuse)
	return res, fused, rec
}
