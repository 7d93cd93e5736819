// Package toolset turns a list of tools into MCP servers and a Streamable
// HTTP handler. It owns the result wire format every tool shares: one text
// content block holding the JSON result (no structured duplicate, so the
// diff page budget of docs/architecture.md#page-fitting is not halved), and
// tool failures as results with isError and {"error":{"code","message",…}}.
package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/args"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Tool is one MCP tool: its contract (name, schema, policy) and its handler.
type Tool struct {
	Name        string
	Title       string
	Description string
	// Schema is the input JSON Schema (see args.Schema).
	Schema map[string]any
	Policy middleware.ToolPolicy
	// Needs is what the tool needs of its caller beyond Policy's scopes.
	Needs      Need
	ReadOnly   bool
	Idempotent bool
	OpenWorld  bool
	// Pages marks a tool that serves pages: its handler records each
	// page's size (middleware.Record.SetPage), and the page metrics have
	// a series for it from the start.
	Pages bool
	// Unavailable, when set, is the answer to every call whose arguments
	// decode: the upstream the tool needs is not configured on this gateway.
	// It is decided once, at wiring time, instead of in each handler.
	Unavailable error
	Handle      func(ctx context.Context, raw json.RawMessage) (any, error)
	// admitted is set by Typed, whose Handle enforces Policy and Needs.
	admitted bool
}

// Typed builds a Tool's schema and handler from a typed function and the
// Tool's declared contract, in this order: the arguments are decoded
// strictly by args.Decode, an Unavailable tool refuses, and admit enforces
// Policy and Needs against the caller. So f only ever sees valid input from a caller
// its policy admits, a refusal never reaches an upstream, and no handler
// re-checks its caller. Set every field of t before calling Typed.
func Typed[In any](t Tool, f func(ctx context.Context, in In) (any, error)) Tool {
	t.Schema = args.Schema[In]()
	unavailable, pol, need := t.Unavailable, t.Policy, t.Needs
	t.Handle = func(ctx context.Context, raw json.RawMessage) (any, error) {
		in, err := args.Decode[In](raw)
		if err != nil {
			return nil, err
		}
		if unavailable != nil {
			return nil, unavailable
		}
		if err := admit(ctx, pol, need); err != nil {
			return nil, err
		}
		return f(ctx, in)
	}
	t.admitted = true
	return t
}

// Toolset is a named, ordered set of tools served at one MCP endpoint.
type Toolset struct {
	Name         string
	Version      string
	Instructions string
	tools        []Tool
	// auditor records every call (audit.go); nil with audit.mode off.
	auditor Auditor
}

// New returns a toolset. Duplicate tool names, a tool whose policy asks
// for a particular caller but whose handler was not built by Typed (so
// nothing would enforce it), and a scope that does not say what it allows
// (checkScopes) are wiring mistakes and panic.
func New(name, version, instructions string, tools ...Tool) *Toolset {
	checkScopes(tools)
	seen := map[string]bool{}
	for _, t := range tools {
		if seen[t.Name] {
			panic("toolset: duplicate tool " + t.Name)
		}
		if !t.admitted && enforced(t) {
			panic("toolset: tool " + t.Name + " declares a caller policy but was not built by Typed, which enforces it")
		}
		seen[t.Name] = true
	}
	return &Toolset{Name: name, Version: version, Instructions: instructions, tools: tools}
}

// Tools returns the tools in toolset order.
func (c *Toolset) Tools() []Tool { return slices.Clone(c.tools) }

// ToolPolicy implements middleware.Policies.
func (c *Toolset) ToolPolicy(name string) (middleware.ToolPolicy, bool) {
	for _, t := range c.tools {
		if t.Name == name {
			return t.Policy, true
		}
	}
	return middleware.ToolPolicy{}, false
}

// Has reports whether name is a tool of the toolset.
func (c *Toolset) Has(name string) bool { _, ok := c.ToolPolicy(name); return ok }

// Server builds an MCP server holding the tools include accepts.
func (c *Toolset) Server(include func(Tool) bool, log *slog.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: c.Name, Version: c.Version},
		&mcp.ServerOptions{Instructions: c.Instructions, Logger: quiet(log)})
	for _, t := range c.tools {
		if include != nil && !include(t) {
			continue
		}
		s.AddTool(&mcp.Tool{
			Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.Schema,
			Annotations: &mcp.ToolAnnotations{
				Title: t.Title, ReadOnlyHint: t.ReadOnly, IdempotentHint: t.Idempotent,
				DestructiveHint: ptr(false), OpenWorldHint: ptr(t.OpenWorld),
			},
		}, c.handler(t, log))
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// handler adapts a Tool to the SDK: call, with every result rendered.
func (c *Toolset) handler(t Tool, log *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, _ := c.call(ctx, t, log, req, false)
		return res, nil
	}
}

// call runs t for one request, records the outcome for logs, metrics and
// the audit record, and renders the one-text-block result. A failure
// that is the gateway's (internal_error, unavailable) has its cause logged
// here, once, with the request id: the caller is only ever shown a
// generic message.
//
// With fuse set (the owned path's tools, ownedTools), a result that
// writes its own text block (JSONStringAppender) is not rendered: it comes
// back as fused, res nil, for writeOwned to write straight into the
// answer, and its text is built only if the audit record asks for it.
// Every other outcome comes back rendered, as the SDK has it.
func (c *Toolset) call(ctx context.Context, t Tool, log *slog.Logger, req *mcp.CallToolRequest, fuse bool) (res *mcp.CallToolResult, fused JSONStringAppender) {
	ctx, release := boundToCaller(ctx)
	defer release()
	ctx = stdioCall(ctx, t.Name, req)
	ctx = c.auditStart(ctx)
	rec := middleware.RecordFromContext(ctx)
	refuse := func(te *toolerr.Error) *mcp.CallToolResult {
		rec.SetOutcome(string(te.Code))
		logGatewayFault(ctx, log, t.Name, rec, te)
		if err := c.audited(ctx, t, req, string(te.Code), nil); err != nil {
			te = toolerr.As(err)
			rec.SetOutcome(string(te.Code))
		}
		return ErrorResult(te)
	}
	out, err := t.Handle(ctx, req.Params.Arguments)
	if err != nil {
		return refuse(dependencyFault(toolerr.As(err))), nil
	}
	var a answer
	if f, ok := out.(JSONStringAppender); ok && fuse {
		a.fused = f
	} else if a.text, err = resultText(out); err != nil {
		return refuse(toolerr.Wrap(err, toolerr.Internal, "result could not be encoded")), nil
	}
	// Recorded before it is answered: with audit.mode required, a
	// call whose record cannot be queued answers nothing of it.
	if err := c.audited(ctx, t, req, "ok", &a); err != nil {
		te := toolerr.As(err)
		rec.SetOutcome(string(te.Code))
		return ErrorResult(te), nil
	}
	rec.SetOutcome("ok")
	if a.fused != nil {
		return nil, a.fused
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.text}}}, nil
}

// dependencyFault answers an internal error whose cause is one of the
// gateway's dependencies failing (middleware.ErrUnavailable: the store
// behind its breaker) as that dependency's unavailability, naming it,
// whatever the tool wrapped it in: the caller did nothing wrong and may
// try again. The cause stays for the log.
func dependencyFault(te *toolerr.Error) *toolerr.Error {
	var de *middleware.DependencyError
	if te.Code != toolerr.Internal || !errors.As(te, &de) {
		return te
	}
	// A tool result carries no Retry-After header: the breaker's second
	// is said in the body, as middleware.Refuse repeats the header.
	u := middleware.UnavailableError(de.Part).With("retry_after_seconds", 1)
	u.Err = te.Err
	return u
}

// logGatewayFault logs the cause of a tool failure that is the gateway's
// own: internal_error or unavailable. Every other code is the caller's or
// an upstream's and its answer says all there is.
func logGatewayFault(ctx context.Context, log *slog.Logger, tool string, rec *middleware.Record, te *toolerr.Error) {
	if log == nil || (te.Code != toolerr.Internal && te.Code != toolerr.Unavailable) {
		return
	}
	cause := "none recorded"
	if te.Err != nil {
		cause = te.Err.Error()
	}
	log.LogAttrs(ctx, slog.LevelError, "tool failed inside the gateway",
		slog.String("request_id", rec.RequestID()), slog.String("tool", tool), slog.String("code", string(te.Code)),
		slog.String("message", te.Message), slog.String("error", cause))
}

// ErrorResult renders a refusal as an isError tool result.
func ErrorResult(e *toolerr.Error) *mcp.CallToolResult {
	text, err := EncodeJSON(e.Body())
	if err != nil {
		text = []byte(`{"error":{"code":"internal_error","message":"internal error"}}`)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
}
