package toolset

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/store/audit"
)

// Auditor records each answered tool call (store/audit.Recorder,
// docs/audit.md). A non-nil error means the call must not be answered:
// its record could not be queued and audit.mode is required.
type Auditor interface {
	Record(ctx context.Context, c audit.Call) error
}

// SetAuditor makes every call of the toolset's tools recorded by a; nil
// (the default, audit.mode off) records nothing. Set it at wiring, before
// serving.
func (c *Toolset) SetAuditor(a Auditor) { c.auditor = a }

// auditStart gives the call an evidence slot that its tool fills in
// (audit.SetDiff, audit.SetDocument); without an auditor ctx is unchanged.
func (c *Toolset) auditStart(ctx context.Context) context.Context {
	if c.auditor == nil {
		return ctx
	}
	return audit.WithEvidence(ctx)
}

// audited records the call's outcome and, for an answer, its text (nil
// for a refusal), which the record asks for only when no evidence
// identifies the result (audit.Call.Result): a fused answer's text is
// built then and only then.
func (c *Toolset) audited(ctx context.Context, t Tool, req *mcp.CallToolRequest, outcome string, result *answer) error {
	if c.auditor == nil {
		return nil
	}
	var args json.RawMessage
	if req != nil && req.Params != nil {
		args = req.Params.Arguments
	}
	call := audit.Call{Toolset: c.Name, Tool: t.Name, Args: args, Outcome: outcome, Stdio: ctx.Value(stdioKey{}) != nil}
	if result != nil {
		call.Result = (*result).Text
	}
	return c.auditor.Record(ctx, call)
}
