package toolset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// stdioIDKey is the _meta member through which a stdio call's own request
// id reaches its tool. The SDK does not hand a tool the JSON-RPC id, and
// stdio has no HTTP chain whose MCP peek records it; page fitting needs it
// (seed 000: the page fits "the actual … RPC ID"). A client cannot set it:
// the stdio reader overwrites it on every message, and only a stdio call
// reads it.
const stdioIDKey = "agent-gateway/stdio-request-id"

// maxStdioLine bounds one message read by the id reader, as the SDK's
// stdio transport bounds its frames (mcp.DefaultMaxLineLength); a longer
// line passes through unchanged and the SDK refuses it.
const maxStdioLine = mcp.DefaultMaxLineLength

type stdioKey struct{}

// RunStdio serves srv over newline-delimited JSON-RPC on in and out (the
// stdio transport), with each tools/call carrying its own request id to
// the tool, as the HTTP chain's MCP peek does.
func RunStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.WriteCloser) error {
	ctx = context.WithValue(ctx, stdioKey{}, true)
	return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(newIDReader(in)), Writer: out})
}

// stdioCall returns ctx carrying a Record of the stdio call, whose id the
// id reader put into the call's _meta; ctx unchanged over HTTP (the chain
// recorded the call) or when no id is known.
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

// idReader passes newline-delimited JSON-RPC messages through, adding to
// each request's params._meta its id exactly as sent (a JSON text in a
// string, so large numbers and escapes survive). Anything it cannot read
// as a message passes through unchanged, for the SDK to refuse.
type idReader struct {
	br   *bufio.Reader
	out  []byte
	err  error
	pass bool // inside an over-long line: pass the rest through
}

func newIDReader(r io.Reader) *idReader { return &idReader{br: bufio.NewReaderSize(r, 64<<10)} }

func (r *idReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// fill reads the next line (or, past maxStdioLine, the next piece of an
// over-long one) into out.
func (r *idReader) fill() {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case err == bufio.ErrBufferFull && len(line) <= maxStdioLine:
			continue
		case err == bufio.ErrBufferFull:
			r.out, r.pass = line, true
			return
		case err != nil:
			r.err = err
		}
		break
	}
	if r.pass || len(bytes.TrimRight(line, "\r\n")) > maxStdioLine {
		r.out, r.pass = line, false // an over-long line, or its tail
		return
	}
	r.out = withIDs(line)
}

// withIDs returns line with each request's id added to its params._meta,
// or line unchanged when it is not one message or a batch of them.
func withIDs(line []byte) []byte {
	body := bytes.TrimRight(line, "\r\n")
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return line
	}
	var out []byte
	switch trimmed[0] {
	case '{':
		out = withID(trimmed)
	case '[':
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return line
		}
		for i, m := range batch {
			batch[i] = withID(m)
		}
		out, _ = json.Marshal(batch)
	}
	if out == nil {
		return line
	}
	return append(out, line[len(body):]...)
}

// withID adds the id of one request message to its params._meta; a
// message it cannot read is returned unchanged.
func withID(msg []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	id, hasID := m["id"]
	params, hasParams := m["params"]
	if !hasID || string(id) == "null" || m["method"] == nil || !hasParams {
		return msg
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok && (json.Unmarshal(raw, &meta) != nil || meta == nil) {
		return msg
	}
	var err error
	if meta[stdioIDKey], err = json.Marshal(string(id)); err != nil {
		return msg
	}
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	if m["params"], err = json.Marshal(p); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}
