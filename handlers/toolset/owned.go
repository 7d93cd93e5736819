package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/jsonwire"
	"github.com/agent-gateway/agent-gateway/middleware"
)

// ownedPath serves stateless tools/call on the request goroutine, with the
// SDK's own types and the very tool handlers registered on the SDK
// servers, and writes the answer in one pass: the bytes the SDK's
// stateless JSON handler would write. It exists because that handler is
// most of the gateway's CPU per call (docs/architecture.md, "the owned
// tools/call path"): it decodes each call nine times through a 32 KiB
// buffer, sets up a session, a connection and three goroutines per
// request, and encodes the result through three nested layers.
//
// Everything it does not fully understand (ownable) goes to the SDK
// handler unchanged, and so does every other method.
type ownedPath struct {
	opts *mcp.StreamableHTTPOptions
	sdk  http.Handler
	// full and anonymous are the tools of the two SDK servers HTTPHandler
	// builds (principal and anonymous), run as the SDK's handlers run them.
	full, anonymous map[string]ownedTool
}

// ownedTool runs one tool for the owned path: Toolset.call with fuse set,
// so that a result that writes its own text block comes back unrendered.
type ownedTool func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, fused JSONStringAppender)

// ownedTools are the tools include accepts, by name, as the owned path
// runs them: the tools Server registers, with the same handling.
func (c *Toolset) ownedTools(include func(Tool) bool, log *slog.Logger) map[string]ownedTool {
	out := map[string]ownedTool{}
	for _, t := range c.tools {
		if include == nil || include(t) {
			out[t.Name] = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, JSONStringAppender) {
				return c.call(ctx, t, log, req, true)
			}
		}
	}
	return out
}

// ServeHTTP answers an ownable call itself and hands the rest to the SDK.
func (o *ownedPath) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call, ok := o.ownable(r)
	if !ok {
		o.sdk.ServeHTTP(w, r)
		return
	}
	ctx := r.Context()
	middleware.RecordFromContext(ctx).SetOwned()
	res, fused := call.run(ctx, &mcp.CallToolRequest{
		Params: call.params,
		// servePOST: what the SDK attaches to every request.
		Extra: &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(ctx), Header: r.Header},
	})
	writeOwned(w, call.id, res, fused)
}

// outBuf holds answers being written, so a call's answer is not garbage.
// Buffers over maxPooledAnswer (a 1 MiB document's answer) are left to the
// collector: the pool must not hold memory the gateway's RSS bound needs.
var outBuf = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAnswer covers a 64 KiB fragment's or a diff page's answer.
const maxPooledAnswer = 256 << 10

// writeOwned writes the JSON-RPC response to a call as the SDK's stateless
// JSON handler does: servePOST's headers, then jsonrpc2.EncodeMessage of
// the response, in one Write (deliverLocked). The result's text is escaped
// once, straight into the answer, as TextContent.MarshalJSON escapes it
// (encoding/json with HTML escaping; the outer layers add none); a fused
// result (ownedTool) writes that escaped text itself, in one pass from
// its own members, where the text was never built.
func writeOwned(w http.ResponseWriter, id []byte, res *mcp.CallToolResult, fused JSONStringAppender) {
	p := outBuf.Get().(*[]byte)
	b := append((*p)[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	switch text, isError, one := soleText(res); {
	case fused != nil:
		b = append(b, textBlockStart...)
		b = fused.AppendJSONString(b)
		b = append(b, `}]}`...)
	case one:
		b = append(b, textBlockStart...)
		// Room for the text and its escapes up front: the pool is emptied
		// at every collection, and a buffer grown by append from nothing
		// allocates its size about twice over on the way.
		b = slices.Grow(b, len(text)+len(text)/8+64)
		b = jsonwire.AppendString(b, text)
		b = append(b, `}]`...)
		if isError {
			b = append(b, `,"isError":true`...)
		}
		b = append(b, '}')
	default:
		// Anything but the one-text-block result every tool returns is
		// encoded by the SDK's own MarshalJSON, as Server.callTool leaves it.
		if res != nil && res.Content == nil {
			r := *res
			r.Content = []mcp.Content{}
			res = &r
		}
		b = append(b, `,"result":`...)
		b = appendJSON(b, res)
	}
	b = append(b, '}')
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(b)
	if cap(b) <= maxPooledAnswer {
		*p = b
		outBuf.Put(p)
	}
}

// textBlockStart opens a result of one text block, up to its text.
const textBlockStart = `,"result":{"content":[{"type":"text","text":`

// soleText is the text of a result that is exactly one plain text block,
// the shape every tool's result has.
func soleText(res *mcp.CallToolResult) (text string, isError, ok bool) {
	if res == nil || res.Meta != nil || len(res.Content) != 1 || res.StructuredContent != nil ||
		res.InputRequests != nil || res.RequestState != "" {
		return "", false, false
	}
	tc, isText := res.Content[0].(*mcp.TextContent)
	if !isText || tc == nil || tc.Meta != nil || tc.Annotations != nil {
		return "", false, false
	}
	return tc.Text, res.IsError, true
}

// appendJSON appends v as the SDK's jsonMarshal writes it: encoding/json
// without HTML escaping of its own (a MarshalJSON result keeps its
// escapes).
func appendJSON(b []byte, v any) []byte {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return b
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// sdkDebugSet reports whether MCPGODEBUG changes the SDK's behaviour from
// its defaults, which the owned path mirrors; then everything goes to the
// SDK.
func sdkDebugSet() bool { return os.Getenv("MCPGODEBUG") != "" }
