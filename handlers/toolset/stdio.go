package toolset

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// stdioIDKey is the _meta member through which a stdio call's own request
// id reaches its tool. The SDK does not hand a tool the JSON-RPC id, and
// stdio has no HTTP chain whose MCP peek records it; page fitting needs it
// (docs/architecture.md#page-fitting: the envelope with the request's own
// id). A client cannot set it: the frame reader removes it from every message
// and sets it on each request, and only a stdio call reads it.
const stdioIDKey = "agent-gateway/stdio-request-id"

// maxStdioLine bounds one line read by the frame reader, the bound the
// SDK's stdio transport puts on its frames (mcp.DefaultMaxLineLength); a
// longer line is refused without being held.
const maxStdioLine = mcp.DefaultMaxLineLength

// sdkFrameLimit is the SDK's bound on the frames the reader hands it. A
// re-encoded line grows only by its id, quoted once more into _meta (at
// most twice the id's length, plus the member's name), so three lines'
// worth holds any line the reader accepted; the reader enforces the
// client's bound.
const sdkFrameLimit = 3*maxStdioLine + 4<<10

type stdioKey struct{}

// RunStdio serves srv over newline-delimited JSON-RPC on in and out (the
// stdio transport), with each tools/call carrying its own request id to
// the tool, as the HTTP chain's MCP peek does. Lines the frame reader
// refuses are answered on out, between whole messages of the SDK.
func RunStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.WriteCloser) error {
	ctx = context.WithValue(ctx, stdioKey{}, true)
	w := &messageWriter{w: out}
	return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(newFrameReader(in, w)), Writer: w, MaxLineLength: sdkFrameLimit})
}

// messageWriter keeps the session's output whole messages: the SDK writes
// each message with one Write, and so does the frame reader each refusal,
// so with one lock their lines never interleave.
type messageWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (m *messageWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.w.Write(p)
}

func (m *messageWriter) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.w.Close()
}

// stdioCall returns ctx carrying a Record of the stdio call, whose id the
// frame reader put into the call's _meta; ctx unchanged over HTTP (the
// chain recorded the call) or when no id is known.
func stdioCall(ctx context.Context, tool string, req *mcp.CallToolRequest) context.Context {
	if ctx.Value(stdioKey{}) == nil || req == nil || req.Params == nil {
		return ctx
	}
	id, ok := req.Params.Meta[stdioIDKey].(string)
	if !ok || id == "" {
		return ctx
	}
	rec := &middleware.Record{}
	rec.SetCall(middleware.Call{Method: "tools/call", Tool: tool, ID: json.RawMessage(id)})
	return middleware.WithRecord(ctx, rec)
}
