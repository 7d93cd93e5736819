package upstream

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// testTLS returns a server certificate for 127.0.0.1 and the pool that
// trusts it (httptest's).
func testTLS(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.StartTLS()
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	return ts.TLS.Certificates[0], pool
}

// tlsListen listens on loopback with TLS, offering only the given
// application protocol.
func tlsListen(t *testing.T, proto string) (net.Listener, *x509.CertPool) {
	t.Helper()
	cert, pool := testTLS(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{proto}})
	if err != nil {
		t.Fatal(err)
	}
	return ln, pool
}

func tlsClient(t *testing.T, ln net.Listener, pool *x509.CertPool) *Client {
	t.Helper()
	c := New(Config{Name: "test", Origin: mustOrigin(t, "https://"+ln.Addr().String()), IOTimeout: testTimeout, RootCAs: pool})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestContentLengthLinesOverTLS: over HTTP/1.1 in TLS the lines are
// counted in the plaintext, above TLS.
func TestContentLengthLinesOverTLS(t *testing.T) {
	noLeaks(t)
	ln, pool := tlsListen(t, "http/1.1")
	srv := &scriptServer{ln: ln, answers: []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\nhello",
	}}
	serveScript(t, srv)
	c := tlsClient(t, ln, pool)
	resp, err := get(t, c, "x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello" || resp.ProtoMajor != 1 {
		t.Fatalf("%s: %q", resp.Proto, b)
	}
	_, err = readAll(t, c)
	wantKind(t, err, KindFraming)
	if n := srv.connections(); n != 1 {
		t.Fatalf("%d connections", n)
	}
}

// serveScript runs srv's accept loop on its listener until the test ends.
func serveScript(t *testing.T, srv *scriptServer) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(func() {
		srv.ln.Close()
		srv.mu.Lock()
		for _, c := range srv.open {
			c.Close()
		}
		srv.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := srv.ln.Accept()
			if err != nil {
				return
			}
			srv.mu.Lock()
			srv.conns++
			srv.open = append(srv.open, c)
			srv.mu.Unlock()
			wg.Go(func() { srv.serve(c) })
		}
	})
}

// TestContentLengthFieldsOverHTTP2: net/http's HTTP/2 client keeps every
// content-length field apart, so more than one is refused from the
// header; the GET itself still goes out once, ending its stream with an
// empty DATA frame.
func TestContentLengthFieldsOverHTTP2(t *testing.T) {
	noLeaks(t)
	cases := []struct {
		name   string
		fields []string
		ok     bool
	}{
		{"one field", []string{"5"}, true},
		{"no field", nil, true},
		{"two identical fields", []string{"5", "5"}, false},
		{"two differing fields", []string{"5", "6"}, false},
		{"not a length", []string{"5, 5"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ln, pool := tlsListen(t, "h2")
			h2 := serveH2(t, ln, c.fields)
			body, err := readAll(t, tlsClient(t, ln, pool))
			if c.ok {
				if err != nil || body != "hello" {
					t.Fatalf("got %q, %v", body, err)
				}
			} else {
				wantKind(t, err, KindFraming)
			}
			if got := h2.requests(); len(got) != 1 || got[0] != "GET /x" {
				t.Fatalf("requests %q, want one GET", got)
			}
		})
	}
}

// h2Server is a minimal HTTP/2 server over one TLS listener: each stream
// is answered 200 with the given content-length fields and "hello".
type h2Server struct {
	mu   sync.Mutex
	seen []string
}

func (s *h2Server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func serveH2(t *testing.T, ln net.Listener, lengths []string) *h2Server {
	t.Helper()
	s := &h2Server{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Go(func() { s.serve(c, lengths) })
		}
	})
	return s
}

func (s *h2Server) serve(c net.Conn, lengths []string) {
	defer c.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, c)
	if fr.WriteSettings() != nil {
		return
	}
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && fr.WriteSettingsAck() != nil {
				return
			}
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return
			}
			var method, path string
			for _, hf := range fields {
				switch hf.Name {
				case ":method":
					method = hf.Value
				case ":path":
					path = hf.Value
				}
			}
			s.mu.Lock()
			s.seen = append(s.seen, method+" "+path)
			s.mu.Unlock()
			var block bytes.Buffer
			enc := hpack.NewEncoder(&block)
			_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			for _, l := range lengths {
				_ = enc.WriteField(hpack.HeaderField{Name: "content-length", Value: l})
			}
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: block.Bytes(), EndHeaders: true}) != nil ||
				fr.WriteData(f.StreamID, true, []byte("hello")) != nil {
				return
			}
		case *http2.GoAwayFrame:
			return
		}
	}
}

// TestNoHTTP2WithoutTLS: a plain-http origin (loopback only) speaks
// HTTP/1.1, never cleartext HTTP/2, so its answers are always counted
// on the connection.
func TestNoHTTP2WithoutTLS(t *testing.T) {
	noLeaks(t)
	srv := startScript(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
	if _, err := readAll(t, clientFor(t, srv.url(), nil)); err != nil {
		t.Fatal(err)
	}
	if r := srv.requests(); len(r) != 1 || strings.Contains(r[0], "PRI * HTTP/2.0") || strings.Contains(strings.ToLower(r[0]), "upgrade") {
		t.Fatalf("requests %q", r)
	}
}
