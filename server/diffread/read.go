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
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxResponseBytes bounds one HTTP response from the endpoint. A page is
// at most 49,000 bytes on the wire (seed 000); the bound leaves room for
// a gateway that grows, while keeping what a hostile endpoint can make the
// reader hold small.
const MaxResponseBytes = 1 << 20

// DefaultPageTimeout bounds one call when Options.PageTimeout is zero.
// Every page costs the gateway a whole fetch and verification of the diff,
// so a page of a very large diff takes as long as reading it all once.
const DefaultPageTimeout = 5 * time.Minute

// Options says where and how to read.
type Options struct {
	// Endpoint is the gateway's Forgejo MCP endpoint, e.g.
	// http://127.0.0.1:8080/mcp/forgejo. Plain http is accepted only for a
	// loopback host: the bearer must not cross a network in clear.
	Endpoint string
	// Token is the Forgejo bearer the gateway forwards; it is only ever
	// sent to Endpoint.
	Token string
	// PageTimeout bounds each call (DefaultPageTimeout when zero); there
	// is no total deadline beyond the context's.
	PageTimeout time.Duration
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
		return nil, &CallError{Err: err}
	}
	defer session.Close()
	v := NewVerifier(target, w)
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
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// connect opens an MCP session with the official SDK client: Streamable
// HTTP, no standalone event stream (the gateway is stateless), no
// reconnection (a repeated page costs a whole diff fetch).
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
	ctx, cancel := context.WithTimeout(ctx, pageTimeout(opts))
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: opts.Endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true,
		MaxEventSize: MaxResponseBytes,
	}, nil)
}

func pageTimeout(opts Options) time.Duration {
	if opts.PageTimeout > 0 {
		return opts.PageTimeout
	}
	return DefaultPageTimeout
}

// callPage calls the tool once and returns the page, or the tool's error
// as a StaleError or ToolError.
func callPage(ctx context.Context, s *mcp.ClientSession, opts Options, args map[string]any, v *Verifier) (*Page, error) {
	n, off := v.Pages()+1, v.Offset()
	ctx, cancel := context.WithTimeout(ctx, pageTimeout(opts))
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: ToolName, Arguments: args})
	if err != nil {
		return nil, &CallError{Page: n, Offset: off, Err: err}
	}
	fail := func(format string, a ...any) error {
		return &VerificationError{Page: n, Offset: off, Check: CheckPage,
			Expected: "one text block holding a page", Got: fmt.Sprintf(format, a...)}
	}
	if len(res.Content) != 1 {
		return nil, fail("%d content blocks", len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return nil, fail("a %T block", res.Content[0])
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

var (
	errRedirect     = errors.New("the endpoint redirected; redirects are not followed")
	errResponseSize = fmt.Errorf("a response over %d bytes", MaxResponseBytes)
)

// bearerTransport adds the bearer to every request (the reader talks only
// to its one endpoint: redirects are refused) and bounds every response.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

// RoundTrip sends the request with the bearer and bounds the response.
func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > MaxResponseBytes {
		resp.Body.Close()
		return nil, errResponseSize
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

// boundedBody fails a read past its bound instead of truncating silently.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body that ends exactly at the bound from
		// one that goes on.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errResponseSize
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
