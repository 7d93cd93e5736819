package upstream

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes one upstream origin.
type Config struct {
	// Name labels metrics ("forgejo", "github").
	Name string
	// Origin is the only scheme://host:port requests may go to.
	Origin *url.URL
	// IOTimeout bounds each wait for progress: connecting and receiving
	// headers, and then each read of the body. It is not a total deadline, so
	// a long but steadily flowing body is fine (no total deadline:
	// docs/architecture.md#upstream-transport).
	IOTimeout time.Duration
	// Observer, if set, is told about every exchange (metrics).
	Observer Observer
	// RootCAs, if set, are the roots an https origin's certificate must
	// chain to instead of the system's (tests only).
	RootCAs *x509.CertPool
	// Tracing, if set, makes each exchange a span (tracing.otlp_endpoint);
	// nil adds nothing to the exchange.
	Tracing *Tracing
}

// Observer receives one call per finished exchange, for metrics.
type Observer interface {
	ObserveUpstream(upstream, method string, status int, kind Kind, elapsed time.Duration)
}

// Client is a strict HTTP client for one fixed origin.
type Client struct {
	name      string
	origin    *url.URL
	ioTimeout time.Duration
	hc        *http.Client
	observer  Observer
}

// DefaultIOTimeout is used when Config.IOTimeout is zero.
const DefaultIOTimeout = 30 * time.Second

// New returns a Client. It panics on a missing origin: that is a wiring
// mistake, not a per-request condition.
func New(cfg Config) *Client {
	if cfg.Origin == nil {
		panic("upstream.New: nil origin")
	}
	if cfg.IOTimeout <= 0 {
		cfg.IOTimeout = DefaultIOTimeout
	}
	kept := newBaseTransport(cfg.IOTimeout, cfg.RootCAs)
	fresh := kept.Clone()
	fresh.DisableKeepAlives = true
	var base http.RoundTripper = &wireTransport{next: kept, fresh: fresh}
	if cfg.Tracing != nil {
		base = newTracingTransport(base, cfg.Name, cfg.Tracing)
	}
	return &Client{
		name:      cfg.Name,
		origin:    cfg.Origin,
		ioTimeout: cfg.IOTimeout,
		observer:  cfg.Observer,
		hc: &http.Client{
			Transport: &credentialTransport{origin: cfg.Origin, base: base},
			// Never follow: the 3xx itself comes back and Do turns it into KindRedirect.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// CloseIdleConnections closes the kept-alive connections to the origin
// that no request is using (tests that check for leaked goroutines, and
// shutdown).
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Origin returns the fixed origin.
func (c *Client) Origin() *url.URL { u := *c.origin; return &u }

// NewRequest builds a request to the fixed origin from escaped path
// segments and a query. The body, if any, is sent as given.
func (c *Client) NewRequest(ctx context.Context, method string, query url.Values, body io.Reader, segments ...string) (*http.Request, error) {
	p, raw, err := Path(segments...)
	if err != nil {
		return nil, &Error{Kind: KindRequest, Reason: err.Error(), Err: err}
	}
	u := &url.URL{Scheme: c.origin.Scheme, Host: c.origin.Host, Path: p, RawPath: raw}
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, &Error{Kind: KindRequest, Reason: "cannot build request", Err: err}
	}
	return req, nil
}

// Do sends req and returns the response once its headers arrived. It
// refuses a request to any other origin (by URL or Host header), asks for identity encoding,
// refuses redirects and non-identity Content-Encoding, and wraps the body so
// that each read must make progress within the I/O timeout. The caller must
// close the body; reading it past a bound is the caller's choice (see
// ReadBounded).
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	start := time.Now()
	// req.Host, when set, is the Host header sent: a different one would
	// reach another virtual host behind the origin's address.
	if !sameOrigin(c.origin, req.URL) || (req.Host != "" && !sameOrigin(c.origin, &url.URL{Scheme: req.URL.Scheme, Host: req.Host})) {
		return nil, c.observe(req, start, 0, &Error{Kind: KindRequest, Reason: "request outside the fixed origin"})
	}
	ctx, cancel := context.WithCancel(req.Context())
	// net/http writes a request only on a connection it got: no GotConn,
	// nothing of the request left the gateway (Error.NotSent).
	var gotConn atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) }})
	wd := newWatchdog(c.ioTimeout, cancel)
	req = req.Clone(ctx)
	req.Header.Set("Accept-Encoding", "identity")
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "agent-gateway")
	}
	wd.arm()
	resp, err := c.hc.Do(req)
	wd.disarm()
	if err != nil {
		wd.stop()
		err = classify(err, wd)
		if ue := (*Error)(nil); !gotConn.Load() && errors.As(err, &ue) {
			ue.NotSent = true
		}
		return nil, c.observe(req, start, 0, err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		resp.Body.Close()
		wd.stop()
		return nil, c.observe(req, start, resp.StatusCode, &Error{Kind: KindRedirect, Status: resp.StatusCode, Reason: "redirect refused"})
	}
	if ce := resp.Header.Values("Content-Encoding"); len(ce) > 0 && !(len(ce) == 1 && strings.EqualFold(strings.TrimSpace(ce[0]), "identity")) {
		resp.Body.Close()
		wd.stop()
		return nil, c.observe(req, start, resp.StatusCode, &Error{Kind: KindFraming, Status: resp.StatusCode, Reason: "content encoding refused"})
	}
	c.observe(req, start, resp.StatusCode, nil)
	resp.Body = &watchedBody{rc: resp.Body, wd: wd}
	return resp, nil
}

func (c *Client) observe(req *http.Request, start time.Time, status int, err error) error {
	if c.observer != nil {
		var kind Kind
		var ue *Error
		if errors.As(err, &ue) {
			kind = ue.Kind
		}
		c.observer.ObserveUpstream(c.name, req.Method, status, kind, time.Since(start))
	}
	return err
}

// classify turns a transport error into an *Error.
func classify(err error, wd *watchdog) error {
	var ue *Error
	if errors.As(err, &ue) {
		return err
	}
	var ne net.Error
	if wd.fired() || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &Error{Kind: KindTimeout, Reason: "no progress within the I/O timeout", Err: err}
	}
	if malformedHead(err) {
		return &Error{Kind: KindFraming, Reason: "the response head is malformed or over 64 KiB", Err: err}
	}
	if badLengthFraming(err) {
		return &Error{Kind: KindFraming, Reason: "invalid Content-Length or Transfer-Encoding", Err: err}
	}
	return &Error{Kind: KindUnavailable, Reason: "connection failed", Err: err}
}

// malformedHead recognises the errors net/http returns for a response
// head it cannot read: headers over MaxResponseHeaderBytes (an upstream
// sending endless headers), a malformed status line or header line. Such
// an upstream is broken, not unreachable, so it is framing rather than
// unavailable. net/http has no error types for them, so the text is
// matched (the hostile-upstream tests pin each case); the text itself,
// which quotes upstream bytes, is kept only as the unexported cause.
func malformedHead(err error) bool {
	s := err.Error()
	return strings.Contains(s, "server response headers exceeded") ||
		strings.Contains(s, "malformed HTTP") || strings.Contains(s, "malformed MIME header")
}

// badLengthFraming recognises the errors net/http returns, instead of a
// response, for a head whose length framing it cannot parse: "bad
// Content-Length", "invalid empty Content-Length", "multiple
// Content-Length headers" (differing values), "unsupported transfer
// encoding", "too many transfer encodings". Like malformedHead, the text
// is matched, as net/http has no error types for them.
func badLengthFraming(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "content-length") || strings.Contains(s, "transfer encoding") || strings.Contains(s, "transfer-encoding")
}

// ReadBounded reads all of r, refusing more than max bytes with KindTooLarge.
// declared is the length the answer announced (Content-Length, or -1):
// when it is within max the buffer is allocated once at that size, instead
// of doubling from 512 bytes as io.ReadAll does, which for a 275 KB
// Contents answer left 700 KB of garbage per read (docs/performance.md).
// A wrong declared length costs only growth: the bound is max alone, and a
// length that lies high holds no more than an answer that sends max bytes
// and stalls held before (io.ReadAll's doubling could hold up to twice
// that).
func ReadBounded(r io.Reader, max, declared int64) ([]byte, error) {
	return ReadBoundedInto(nil, r, max, declared)
}

// ReadBoundedInto is ReadBounded reading into buf's storage when its
// capacity holds the declared length (or, with none declared, from its
// start, growing as ReadBounded grows): a caller that reads answers of
// similar size one after another reuses one buffer instead of leaving
// each answer to the collector. The result aliases buf when it fitted.
func ReadBoundedInto(buf []byte, r io.Reader, max, declared int64) ([]byte, error) {
	size := int64(512)
	if declared >= 0 && declared <= max {
		size = declared + 1 // room for the read that sees EOF
	}
	b := buf[:0]
	if int64(cap(b)) < size {
		b = make([]byte, 0, size)
	}
	lr := io.LimitReader(r, max+1)
	for {
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	if int64(len(b)) > max {
		return nil, &Error{Kind: KindTooLarge, Reason: "response body over its bound"}
	}
	return b, nil
}

// watchedBody resets the watchdog around every read, so a stalled body
// fails with KindTimeout while a flowing one may take as long as it needs.
type watchedBody struct {
	rc   io.ReadCloser
	wd   *watchdog
	once sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.wd.arm()
	n, err := b.rc.Read(p)
	b.wd.disarm()
	if err != nil && err != io.EOF {
		return n, classify(err, b.wd)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.wd.stop)
	return err
}
