package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

type echoArgs struct {
	Text string `json:"text" arg:"required" desc:"Text to echo."`
}

// testTools: one anonymous tool, one passthrough tool, one scoped tool.
// calls counts handler runs by tool name.
func testTools(calls map[string]int) []Tool {
	run := func(name string) { calls[name]++ }
	return []Tool{
		Typed(Tool{Name: "public_echo", Title: "Echo", Description: "Echo text.", Policy: middleware.ToolPolicy{Anonymous: true}, ReadOnly: true},
			func(_ context.Context, in echoArgs) (any, error) {
				run("public_echo")
				return map[string]any{"echo": in.Text, "html": "<b>&amp;</b>"}, nil
			}),
		Typed(Tool{Name: "forge_private", Description: "Needs a bearer."},
			func(_ context.Context, in echoArgs) (any, error) {
				run("forge_private")
				if in.Text == "fail" {
					return nil, toolerr.New(toolerr.NotFound, "no such <thing>").With("native_status", 404)
				}
				return []string{in.Text}, nil
			}),
		Typed(Tool{Name: "doc_secret", Description: "Needs documents:read.", Policy: middleware.ToolPolicy{Scopes: []middleware.Scope{{Name: "documents:read", Allows: "read documents"}}}},
			func(_ context.Context, in echoArgs) (any, error) {
				run("doc_secret")
				return "secret", nil
			}),
	}
}

func callHandler(t *testing.T, tool Tool, raw string) (*mcp.CallToolResult, *middleware.Record) {
	t.Helper()
	rec := &middleware.Record{}
	ctx := middleware.WithRecord(t.Context(), rec)
	c := New("test", "v0", "", tool)
	res, err := c.handler(tool, nil)(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: json.RawMessage(raw)}})
	if err != nil {
		t.Fatalf("handler returned a protocol error: %v", err)
	}
	return res, rec
}

// oneText returns the only content block's text, failing unless there is
// exactly one text block and no structured copy.
func oneText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	if res.StructuredContent != nil {
		t.Fatalf("structured copy present: %v", res.StructuredContent)
	}
	return tc.Text
}

func TestHandlerResults(t *testing.T) {
	calls := map[string]int{}
	tools := testTools(calls)
	plainErr := Tool{Name: "plain_error", Handle: func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("dial tcp 10.0.0.1: SECRET-INTERNAL-DETAIL")
	}}
	unencodable := Tool{Name: "unencodable", Handle: func(context.Context, json.RawMessage) (any, error) {
		return map[string]float64{"x": math.Inf(1)}, nil
	}}
	// A tool that encodes its own result (a diff page) hands over exactly
	// the bytes it measured: not compacted or re-spaced again.
	preEncoded := Tool{Name: "pre_encoded", Handle: func(context.Context, json.RawMessage) (any, error) {
		return json.RawMessage(`{"data":"<\u003e","n":1 }`), nil
	}}
	// A store failing under a tool, wrapped as the tool's internal error,
	// is the store's unavailability, named, and its cause stays hidden.
	storeDown := Tool{Name: "store_down", Handle: func(context.Context, json.RawMessage) (any, error) {
		return nil, toolerr.Wrap(middleware.Unavailable(middleware.PartStore, errors.New("dial tcp 10.0.0.1: SECRET-INTERNAL-DETAIL")),
			toolerr.Internal, "the allowlist could not be read")
	}}
	cases := []struct {
		name     string
		tool     Tool
		raw      string
		isError  bool
		text     string
		outcome  string
		ranTimes int
	}{
		{"success, no HTML escaping", tools[0], `{"text":"a<b>&c"}`, false, `{"echo":"a<b>&c","html":"<b>&amp;</b>"}`, "ok", 1},
		{"success, array result", tools[1], `{"text":"x"}`, false, `["x"]`, "ok", 1},
		{"tool failure", tools[1], `{"text":"fail"}`, true, `{"error":{"code":"not_found","message":"no such <thing>","native_status":404}}`, "not_found", 1},
		{"invalid arguments never reach the tool", tools[0], `{"text":1}`, true, "", "invalid_arguments", 0},
		{"unknown member never reaches the tool", tools[0], `{"text":"a","x":1}`, true, "", "invalid_arguments", 0},
		{"untyped error is internal and hidden", plainErr, `{}`, true, `{"error":{"code":"internal_error","message":"internal error"}}`, "internal_error", 0},
		{"unencodable result", unencodable, `{}`, true, "", "internal_error", 0},
		{"a failing store is unavailable, named", storeDown, `{}`, true, `{"error":{"code":"unavailable","dependency":"store","message":"the store is unavailable; retry later","retry_after_seconds":1}}`, "unavailable", 0},
		{"pre-encoded result taken as it is", preEncoded, `{}`, false, `{"data":"<\u003e","n":1 }`, "ok", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := calls[tc.tool.Name]
			res, rec := callHandler(t, tc.tool, tc.raw)
			text := oneText(t, res)
			if res.IsError != tc.isError {
				t.Fatalf("isError = %v: %s", res.IsError, text)
			}
			if tc.text != "" && text != tc.text {
				t.Fatalf("text = %s\nwant   %s", text, tc.text)
			}
			if !json.Valid([]byte(text)) {
				t.Fatalf("text is not JSON: %s", text)
			}
			if tc.isError {
				var body struct {
					Error struct {
						Code    string `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(text), &body); err != nil || body.Error.Code != tc.outcome || body.Error.Message == "" {
					t.Fatalf("error body %s", text)
				}
				if strings.Contains(text, "SECRET-INTERNAL-DETAIL") {
					t.Fatalf("cause leaked: %s", text)
				}
			}
			if rec.Outcome() != tc.outcome {
				t.Fatalf("outcome = %q, want %q", rec.Outcome(), tc.outcome)
			}
			if ran := calls[tc.tool.Name] - before; tc.tool.Name != "plain_error" && tc.tool.Name != "unencodable" && tc.tool.Name != "pre_encoded" && tc.tool.Name != "store_down" && ran != tc.ranTimes {
				t.Fatalf("tool ran %d times, want %d", ran, tc.ranTimes)
			}
		})
	}
}

func TestEncodeJSON(t *testing.T) {
	b, err := EncodeJSON(map[string]string{"a": "<script>&</script>\u2028"})
	if err != nil {
		t.Fatal(err)
	}
	// <, > and & stay as they are; U+2028 is escaped by encoding/json regardless.
	if string(b) != `{"a":"<script>&</script>\u2028"}` {
		t.Fatalf("%s", b)
	}
}

// selfEncoded is a result with its own encoding, which differs from
// encoding/json's so that a test can tell which one was used.
type selfEncoded struct {
	V string `json:"v"`
}

func (r selfEncoded) AppendJSON(dst []byte) []byte { return append(dst, `{"self":"`+r.V+`"}`...) }

// TestJSONAppenderUsed: a result that offers JSONAppender is written by
// it, as the result's text and by EncodeJSON, into a buffer that may hold
// a previous result (the pool's).
func TestJSONAppenderUsed(t *testing.T) {
	for _, v := range []string{"first", "second, shorter", "x"} {
		text, err := resultText(selfEncoded{V: v})
		if err != nil || text != `{"self":"`+v+`"}` {
			t.Fatalf("resultText = %q, %v", text, err)
		}
		b, err := EncodeJSON(selfEncoded{V: v})
		if err != nil || string(b) != text {
			t.Fatalf("EncodeJSON = %q, %v", b, err)
		}
	}
}

func TestToolset(t *testing.T) {
	c := New("test", "v0", "", testTools(map[string]int{})...)
	if p, ok := c.ToolPolicy("doc_secret"); !ok || p.Scopes[0].Name != "documents:read" {
		t.Fatal("policy lookup")
	}
	if c.Has("nope") || !c.Has("public_echo") {
		t.Fatal("Has")
	}
	names := []string{}
	for _, tool := range c.Tools() {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "public_echo,forge_private,doc_secret" {
		t.Fatalf("order %v", names)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate tool did not panic")
		}
	}()
	New("dup", "v0", "", Tool{Name: "a"}, Tool{Name: "a"})
}

// TestGatewayFaultLogged: a tool failure that is the gateway's own
// (internal_error, unavailable) logs its cause once with the request id
// and tool; the caller sees only the generic message; a caller's or an
// upstream's failure (not_found) logs nothing.
func TestGatewayFaultLogged(t *testing.T) {
	storeDown := Tool{Name: "workflow_dispatch", Handle: func(context.Context, json.RawMessage) (any, error) {
		return nil, toolerr.Wrap(errors.New("disk I/O error: database or disk is full"), toolerr.Internal, "the workflow could not be stored")
	}}
	plain := Tool{Name: "plain", Handle: func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("dial tcp: connection refused")
	}}
	missing := Tool{Name: "missing", Handle: func(context.Context, json.RawMessage) (any, error) {
		return nil, toolerr.New(toolerr.NotFound, "no such profile")
	}}
	for _, tc := range []struct {
		tool  Tool
		cause string // "" logs nothing
	}{
		{storeDown, "database or disk is full"},
		{plain, "connection refused"},
		{missing, ""},
	} {
		t.Run(tc.tool.Name, func(t *testing.T) {
			var logs strings.Builder
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			var ctx context.Context
			middleware.RequestID(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { ctx = r.Context() })).
				ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
			id := middleware.RecordFromContext(ctx).RequestID()
			if id == "" {
				t.Fatal("no request id")
			}
			c := New("test", "v0", "", tc.tool)
			res, err := c.handler(tc.tool, log)(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tc.tool.Name, Arguments: json.RawMessage(`{}`)}})
			if err != nil || !res.IsError {
				t.Fatalf("%v %v", res, err)
			}
			if text := oneText(t, res); strings.Contains(text, "disk") || strings.Contains(text, "dial") {
				t.Fatalf("the cause reached the caller: %s", text)
			}
			lines := strings.Count(logs.String(), "\n")
			if tc.cause == "" {
				if lines != 0 {
					t.Fatalf("logged a failure that is not the gateway's: %s", logs.String())
				}
				return
			}
			if lines != 1 || !strings.Contains(logs.String(), tc.cause) || !strings.Contains(logs.String(), `"request_id":"`+id+`"`) || !strings.Contains(logs.String(), `"tool":"`+tc.tool.Name+`"`) {
				t.Fatalf("want the cause once with the request id and tool, got %d lines: %s", lines, logs.String())
			}
		})
	}
}
