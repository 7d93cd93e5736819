package diffread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/diffpage"
)

// MaxResponseBytes bounds one HTTP response body from the endpoint: the
// 49,000-byte envelope of docs/architecture.md#page-fitting, within which the
// gateway fits the whole JSON-RPC response to every page (its body, as it
// answers with application/json). A response over it is refused
// (BoundEnvelope), so a hostile endpoint cannot feed the reader larger pages
// than the gateway ever sends.
const MaxResponseBytes = diffpage.EnvelopeLimit

// DefaultIdleTimeout is Options.IdleTimeout when it is zero. The gateway
// answers a page only once it fetched and verified the whole diff, so the
// wait for each answer is idle time too: the default leaves room for that
// on large diffs (the gateway waits up to forgejo.io_timeout, 30 s by
// default, for Forgejo's headers alone).
const DefaultIdleTimeout = time.Minute

// Options says where and how to read.
type Options struct {
	// Endpoint is the gateway's Forgejo MCP endpoint, e.g.
	// http://127.0.0.1:8080/mcp/forgejo. Plain http is accepted only for a
	// loopback host: the bearer must not cross a network in clear.
	Endpoint string
	// Token is the Forgejo bearer the gateway forwards; it is only ever
	// sent to Endpoint.
	Token string
	// IdleTimeout ends a call when no byte came from the endpoint for that
	// long, waiting for an answer or within one (DefaultIdleTimeout when
	// zero). A page that keeps making progress is never cut: like the
	// gateway (docs/architecture.md#upstream-transport), the reader has no
	// total deadline beyond the context's, and a response is bounded by
	// MaxResponseBytes.
	IdleTimeout time.Duration
	// MaxBytes, when positive, is the longest diff Read accepts
	// (Verifier.MaxBytes); by default there is none, as the diff contract
	// sets no total cap (docs/architecture.md#streaming-and-memory).
	MaxBytes int64
	// Progress, when set, is called after each verified page.
	Progress func(Progress)
	// Transport carries the HTTP requests (http.DefaultTransport when
	// nil); the reader adds the bearer, bounds responses and refuses
	// redirects around it.
	Transport http.RoundTripper
}

// Progress is how far a read got: pages and bytes verified, of the diff's
// stated length.
type Progress struct {
	Pages int
	Bytes int64
	Total int64
}

// Read reads target's whole diff from opts.Endpoint, verifying every page
// and streaming its bytes to w, and returns the verified result. Any
// error means the diff is not verified, and w may hold a prefix of it
// (verified page by page, but not as a whole): see the package doc.
func Read(ctx context.Context, opts Options, target Target, w io.Writer) (*Result, error) {
	if err := CheckEndpoint(opts.Endpoint); err != nil {
		return nil, err
	}
	session, err := connect(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	v := NewVerifier(target, w)
	v.MaxBytes = opts.MaxBytes
	args := map[string]any{"owner": target.Owner, "repo": target.Repo, "index": target.Index}
	for !v.Done() {
		p, err := callPage(ctx, session, opts, args, v)
		if err != nil {
			return nil, err
		}
		if err := v.Add(p); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(Progress{Pages: v.Pages(), Bytes: v.Offset(), Total: v.ByteCount()})
		}
		if p.NextCursor != nil {
			args["cursor"] = *p.NextCursor
		}
	}
	return v.Finish()
}

// CheckEndpoint refuses an endpoint that is not an absolute http(s) URL,
// and plain http to a host that is not loopback. Read checks it first;
// a command line checks it early to tell a usage error from a failed call.
func CheckEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("endpoint %q: want an absolute http(s) URL without credentials", endpoint)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("endpoint %q: plain http is accepted only for a loopback host; use https", endpoint)
	}
	// The gateway's other endpoint answers a Forgejo bearer with 401
	// invalid_token, which read as a bad token rather than a wrong URL.
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), DocumentsPath) {
		return fmt.Errorf("endpoint %q: this is not a Forgejo endpoint: it is the gateway's documents endpoint; "+
			"the diff is read from the Forgejo endpoint, %s", endpoint, ForgejoPath)
	}
	return nil
}

// The paths of the gateway's two MCP endpoints: the reader reads from the
// Forgejo one, and refuses the documents one by name.
const (
	ForgejoPath   = "/mcp/forgejo"
	DocumentsPath = "/mcp/documents"
)

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// connect opens an MCP session with the official SDK client: Streamable
// HTTP, no standalone event stream (the gateway is stateless), no
// reconnection (a repeated page costs a whole diff fetch). Its error is a
// *BoundError or a *CallError of page 0.
func connect(ctx context.Context, opts Options) (*mcp.ClientSession, error) {
	base := opts.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{
		Transport: &bearerTransport{token: opts.Token, base: base},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errRedirect
		},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent-gateway-diffread", Version: "1"}, nil)
	ctx, watch := watchCall(ctx, idleTimeout(opts))
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: opts.Endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true,
		MaxEventSize: MaxResponseBytes,
	}, nil)
	if refusal := watch.end(err != nil); refusal != nil {
		if s != nil {
			s.Close()
		}
		return nil, refusal
	}
	if err != nil {
		return nil, &CallError{Err: err}
	}
	return s, nil
}

func idleTimeout(opts Options) time.Duration {
	if opts.IdleTimeout > 0 {
		return opts.IdleTimeout
	}
	return DefaultIdleTimeout
}

// callPage calls the tool once and returns the page, or the tool's error
// as a StaleError or ToolError, or the refusal of an answer outside the
// reader's bounds as a BoundError.
func callPage(ctx context.Context, s *mcp.ClientSession, opts Options, args map[string]any, v *Verifier) (*Page, error) {
	n, off := v.Pages()+1, v.Offset()
	ctx, watch := watchCall(ctx, idleTimeout(opts))
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: ToolName, Arguments: args})
	if refusal := watch.end(err != nil); refusal != nil {
		refusal.Page, refusal.Offset = n, off
		return nil, refusal
	}
	if err != nil {
		return nil, &CallError{Page: n, Offset: off, Err: err}
	}
	fail := func(format string, a ...any) error {
		return &BoundError{Page: n, Offset: off, Bound: BoundStrict, Detail: fmt.Sprintf(format, a...)}
	}
	if len(res.Content) != 1 {
		return nil, fail("%d content blocks, not one text block holding a page", len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return nil, fail("a %T block, not one text block holding a page", res.Content[0])
	}
	if res.IsError {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(text.Text), &e); err != nil || e.Error.Code == "" {
			return nil, &ToolError{Page: n, Offset: off, Code: "unknown", Message: "an error result without an error code"}
		}
		if e.Error.Code == "cursor_stale" {
			return nil, &StaleError{Page: n, Offset: off}
		}
		return nil, &ToolError{Page: n, Offset: off, Code: e.Error.Code, Message: e.Error.Message}
	}
	p, err := DecodePage([]byte(text.Text))
	if err != nil {
		return nil, fail("%v", err)
	}
	return p, nil
}

var errRedirect = errors.New("the endpoint redirected; redirects are not followed")

// bearerTransport adds the bearer to every request (the reader talks only
// to its one endpoint: redirects are refused), bounds every response and
// tells the call's watch of every byte that came.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

// RoundTrip sends the request with the bearer and bounds the response.
func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	watch := watchOf(req.Context())
	req = req.Clone(req.Context())
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	watch.progress() // the headers came
	if resp.ContentLength > MaxResponseBytes {
		resp.Body.Close()
		return nil, watch.refuse(BoundEnvelope, "a response of %d bytes, over the %d-byte envelope", resp.ContentLength, MaxResponseBytes)
	}
	resp.Body = &watchedBody{rc: resp.Body, left: MaxResponseBytes, watch: watch}
	return resp, nil
}
