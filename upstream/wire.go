package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// wireTransport is the last RoundTripper before net/http, and the one
// place two rules of the upstream contracts are kept for every upstream
// client (Forgejo's anonymous reads, diff evidence and grants; GitHub's
// Contents, branch and token routes):
//
//   - each request goes out at most once (sendOnce), and is re-sent once,
//     on a fresh connection, only when not a byte of it was written
//     (resend);
//   - an answer whose head carries more than one Content-Length field line
//     is refused (KindFraming), even when the lines agree.
//
// The second rule is the evidence entity's "one canonical Content-Length"
// (docs/architecture.md#evidence-request-and-framing); it is applied to every
// answer because one rule in one place is simpler than carrying the count to
// a single caller, and because an answer with a repeated length is one two
// HTTP readers may frame differently, which no gateway answer needs. Over
// HTTP/1.x the count comes from the connection itself (headScanner: net/http
// merges identical lines before the header is seen); over HTTP/2 net/http
// keeps every content-length field in resp.Header, so the header is counted,
// and one it could not parse is refused as well. HEAD is never sent: the
// scanner frames every answer but 1xx, 204 and 304 by its head.
type wireTransport struct {
	next http.RoundTripper
	// fresh, when set, is next without keep-alive: the one re-send of a
	// request that found its kept-alive connection closed goes out on a
	// connection of its own.
	fresh http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodHead {
		return nil, &Error{Kind: KindRequest, Reason: "HEAD is never sent upstream"}
	}
	// Kept only for the re-send below; net/http never sees it.
	rewind := req.GetBody
	resp, got, err := t.send(t.next, req)
	if err != nil && t.fresh != nil && req.Context().Err() == nil && got.unwritten() {
		retry := req.WithContext(req.Context())
		if rewind != nil {
			if retry.Body, err = rewind(); err != nil {
				return nil, err
			}
		} else if req.Body != nil && req.Body != http.NoBody {
			return nil, err // a body that cannot be rewound: no second attempt
		}
		resp, _, err = t.send(t.fresh, retry)
	}
	return resp, err
}

// send makes one attempt through rt and checks the answer's head.
//
// resend: a kept-alive connection the upstream closed while idle is
// noticed by net/http's reader; a request that took the connection from
// the pool an instant before then fails with nothing written, which net/http
// would re-send itself if the body could be rewound — sendOnce forbids it,
// so such a call used to fail (upstream_unavailable) although the upstream
// never received a byte of it. The wire knows exactly what it wrote (the
// connection counts every byte handed to the kernel; for TLS, every
// plaintext byte of a complete record), so when an attempt on a reused
// connection fails with that count unchanged, RoundTrip sends the request
// once more on a fresh connection: the upstream still receives it at most
// once. A request written even in part is never sent again.
func (t *wireTransport) send(rt http.RoundTripper, req *http.Request) (*http.Response, *gotConn, error) {
	got := &gotConn{}
	out := req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: got.set}))
	sendOnce(out)
	resp, err := rt.RoundTrip(out)
	if err != nil {
		return nil, got, err
	}
	if reason := contentLengthProblem(resp, got.get()); reason != "" {
		resp.Body.Close()
		// An answer arrived, so the request was delivered: never a
		// re-send. (The connection's count may not say so yet: net/http
		// returns an answer while its writer goroutine may still be
		// between the write and the count.)
		return nil, &gotConn{}, &Error{Kind: KindFraming, Status: resp.StatusCode, Reason: reason}
	}
	return resp, got, nil
}

// contentLengthProblem says why resp, read from conn, is refused, or "".
func contentLengthProblem(resp *http.Response, conn net.Conn) string {
	const repeated = "the answer carries more than one Content-Length line"
	if resp.ProtoMajor == 2 {
		switch cl := resp.Header.Values("Content-Length"); {
		case len(cl) > 1:
			return repeated
		case len(cl) == 1 && resp.ContentLength < 0:
			return "the answer's Content-Length is not a length"
		}
		return ""
	}
	hc, ok := conn.(*headCountingConn)
	if !ok {
		return "the answer head was not seen on the connection"
	}
	head, ok := hc.scan.take()
	if !ok {
		// The connection's framing could not be followed: no answer on
		// it can be trusted any more.
		hc.Close()
		return "the answer's framing could not be followed"
	}
	if head.contentLengthLines > 1 {
		hc.Close()
		return repeated
	}
	return ""
}

// gotConn keeps the connection a round trip was given, whether it was
// kept alive from an earlier one, and how many bytes had been written on
// it then. net/http's HTTP/2 client reports it from a goroutine of its
// own, hence the lock.
type gotConn struct {
	mu      sync.Mutex
	conn    net.Conn
	reused  bool
	written int64
}

func (g *gotConn) set(info httptrace.GotConnInfo) {
	g.mu.Lock()
	g.conn, g.reused = info.Conn, info.Reused
	if hc, ok := info.Conn.(*headCountingConn); ok {
		g.written = hc.written.Load()
	}
	g.mu.Unlock()
}

func (g *gotConn) get() net.Conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conn
}

// unwritten reports whether the attempt was given a kept-alive HTTP/1.x
// connection and wrote not a byte on it (an HTTP/1.x connection carries
// one request at a time, so every byte written after GotConn is this
// request's), with no write under way that the count does not show yet.
// An HTTP/2 connection is net/http's to judge.
func (g *gotConn) unwritten() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	hc, ok := g.conn.(*headCountingConn)
	// writing first: a write that ends after this load has added its
	// bytes to written before it leaves writing.
	return ok && g.reused && hc.writing.Load() == 0 && hc.written.Load() == g.written
}

// headCountingConn is an HTTP/1.x connection whose incoming bytes pass
// through a headScanner. It wraps the plain TCP connection, or the TLS
// connection (the scanner must see plaintext), never the TCP connection
// under TLS.
type headCountingConn struct {
	net.Conn
	scan    *headScanner
	written atomic.Int64 // bytes the connection accepted for sending
	// writing counts Writes under way: their bytes may have left before
	// written counts them, so while one runs nothing is "unwritten".
	writing atomic.Int32
}

func (c *headCountingConn) Write(p []byte) (int, error) {
	c.writing.Add(1)
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	c.writing.Add(-1)
	return n, err
}

func (c *headCountingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.scan.feed(p[:n])
	}
	return n, err
}

// newBaseTransport is the net/http transport under wireTransport. Its
// dialers wrap every HTTP/1.x connection in a headCountingConn: the
// plain one for http (loopback origins only), the TLS one for https,
// whose handshake is therefore made here (offering h2 and http/1.1, as
// net/http does); a connection that negotiated h2 is handed back bare, as
// net/http's HTTP/2 client needs the *tls.Conn itself.
func newBaseTransport(ioTimeout time.Duration, roots *x509.CertPool) *http.Transport {
	dialer := &net.Dialer{Timeout: ioTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: nil, // a fixed origin is reached directly, never via ambient proxy settings
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &headCountingConn{Conn: c, scan: newHeadScanner()}, nil
		},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialTLS(ctx, dialer, network, addr, ioTimeout, roots)
		},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    256,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // we ask for identity and refuse anything else
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// dialTLS connects and makes the TLS handshake within ioTimeout (the
// TLSHandshakeTimeout net/http applies to its own handshakes).
func dialTLS(ctx context.Context, dialer *net.Dialer, network, addr string, ioTimeout time.Duration, roots *x509.CertPool) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	raw, err := dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, &tls.Config{ServerName: host, RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
	hctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, err
	}
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		return tc, nil
	}
	return &headCountingConn{Conn: tc, scan: newHeadScanner()}, nil
}
