package toolset

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

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

// stdioDrainLimit bounds how long the end of the input waits for the
// answers of the requests read before it (pendingAnswers): longer than any
// one call takes with the upstream's own timeouts, short of forever.
const stdioDrainLimit = 5 * time.Minute

// RunStdio serves srv over newline-delimited JSON-RPC on in and out (the
// stdio transport), with each tools/call carrying its own request id to
// the tool, as the HTTP chain's MCP peek does. Lines the frame reader
// refuses are answered on out, between whole messages of the SDK. At the
// end of in, every request already read is answered on out before it
// returns (`printf … | agent-gateway stdio` prints every answer).
func RunStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.WriteCloser) error {
	ctx = context.WithValue(ctx, stdioKey{}, true)
	pending := newPendingAnswers(ctx, stdioDrainLimit)
	defer pending.release()
	w := &messageWriter{w: out, pending: pending}
	r := newFrameReader(in, w)
	r.pending = pending
	return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: w, MaxLineLength: sdkFrameLimit})
}

// pendingAnswers counts the requests the frame reader passed to the SDK
// and the answers the SDK wrote. The SDK ends the session as soon as its
// input ends, abandoning the calls still running (their answers were lost
// when a client piped its requests and closed stdin), so the frame reader
// holds the end of the input back until every request read is answered,
// the output fails, ctx ends, the session ends otherwise, or the limit
// passes.
type pendingAnswers struct {
	ctx     context.Context
	limit   time.Duration
	mu      sync.Mutex
	n       int
	changed chan struct{} // signalled (never blocking) on every answer
	done    chan struct{} // closed by release
	once    sync.Once
}

func newPendingAnswers(ctx context.Context, limit time.Duration) *pendingAnswers {
	return &pendingAnswers{ctx: ctx, limit: limit, changed: make(chan struct{}, 1), done: make(chan struct{})}
}

// add counts one request passed on.
func (p *pendingAnswers) add() {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
}

// answered counts one answer written.
func (p *pendingAnswers) answered() {
	p.mu.Lock()
	if p.n > 0 {
		p.n--
	}
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// release stops every wait: the output failed or the session is over.
func (p *pendingAnswers) release() { p.once.Do(func() { close(p.done) }) }

// wait returns once no request is unanswered, or on release, the end of
// ctx or the limit.
func (p *pendingAnswers) wait() {
	timer := time.NewTimer(p.limit)
	defer timer.Stop()
	for {
		p.mu.Lock()
		n := p.n
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-p.changed:
		case <-p.done:
			return
		case <-p.ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// messageWriter keeps the session's output whole messages: the SDK writes
// each message with one Write, and so does the frame reader each refusal,
// so with one lock their lines never interleave. It counts the answers it
// writes in pending, when set.
type messageWriter struct {
	mu      sync.Mutex
	w       io.WriteCloser
	pending *pendingAnswers
}

func (m *messageWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.w.Write(p)
	if m.pending != nil {
		switch {
		case err != nil:
			m.pending.release() // nothing more reaches the client
		case isAnswer(p):
			m.pending.answered()
		}
	}
	return n, err
}

// isAnswer reports whether msg, one JSON-RPC message, is a response to a
// request (an id that is not null, and no method); the frame reader's
// refusals carry a null id, and the server's own requests a method.
func isAnswer(msg []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return false
	}
	return m.ID != nil && string(m.ID) != "null" && m.Method == nil
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
