package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"
)

const testTimeout = 500 * time.Millisecond

// noLeaks checks, after every later cleanup (servers closed, idle
// connections dropped), that the test left no goroutine behind.
func noLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// counted is an httptest server that counts the requests it sees.
type counted struct {
	*httptest.Server
	n atomic.Int64
}

func newCounted(t *testing.T, h http.HandlerFunc) *counted {
	t.Helper()
	c := &counted{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		h(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

// observed records what the client reports to its Observer.
type observed struct {
	mu    sync.Mutex
	kinds []Kind
}

func (o *observed) ObserveUpstream(_, _ string, _ int, kind Kind, _ time.Duration) {
	o.mu.Lock()
	o.kinds = append(o.kinds, kind)
	o.mu.Unlock()
}

func mustOrigin(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}
}

func clientFor(t *testing.T, rawOrigin string, obs Observer) *Client {
	t.Helper()
	c := New(Config{Name: "test", Origin: mustOrigin(t, rawOrigin), IOTimeout: testTimeout, Observer: obs})
	t.Cleanup(c.hc.CloseIdleConnections)
	return c
}

func get(t *testing.T, c *Client, segments ...string) (*http.Response, error) {
	t.Helper()
	req, err := c.NewRequest(t.Context(), http.MethodGet, nil, nil, segments...)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

func wantKind(t *testing.T, err error, kind Kind) *Error {
	t.Helper()
	var ue *Error
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want an *upstream.Error of kind %v", err, kind)
	}
	if ue.Kind != kind {
		t.Fatalf("kind = %v (%v), want %v", ue.Kind, err, kind)
	}
	return ue
}

func TestDoRefusesOtherOrigins(t *testing.T) {
	noLeaks(t)
	origin := newCounted(t, func(http.ResponseWriter, *http.Request) {})
	other := newCounted(t, func(http.ResponseWriter, *http.Request) {})
	obs := &observed{}
	c := clientFor(t, origin.URL, obs)
	ou, _ := url.Parse(origin.URL)
	_, port, _ := net.SplitHostPort(ou.Host)
	cases := []struct {
		name   string
		mutate func(*http.Request)
	}{
		{"other server", func(r *http.Request) { r.URL, _ = url.Parse(other.URL + "/api") }},
		{"same host, other port", func(r *http.Request) {
			r.URL.Host = net.JoinHostPort("127.0.0.1", strings.TrimPrefix(other.URL, "http://127.0.0.1:"))
		}},
		{"other scheme", func(r *http.Request) { r.URL.Scheme = "https" }},
		{"other host name, same port", func(r *http.Request) { r.URL.Host = net.JoinHostPort("localhost", port) }},
		{"Host header naming another site", func(r *http.Request) { r.Host = "evil.example" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := c.NewRequest(t.Context(), http.MethodGet, nil, nil, "api")
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(req)
			_, err = c.Do(req)
			wantKind(t, err, KindRequest)
		})
	}
	if origin.n.Load() != 0 || other.n.Load() != 0 {
		t.Fatalf("servers saw %d and %d requests, want none", origin.n.Load(), other.n.Load())
	}
	t.Run("the origin itself is fine", func(t *testing.T) {
		resp, err := get(t, c, "api")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if origin.n.Load() != 1 {
			t.Fatalf("origin saw %d requests", origin.n.Load())
		}
	})
}

func TestDoRefusesRedirects(t *testing.T) {
	noLeaks(t)
	target := newCounted(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "followed") })
	for _, status := range []int{301, 302, 303, 307, 308, 300, 304} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			origin := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/start" {
					w.Header().Set("Location", target.URL+"/secret")
					w.WriteHeader(status)
					_, _ = io.WriteString(w, "body of the redirect")
				}
			})
			obs := &observed{}
			c := clientFor(t, origin.URL, obs)
			resp, err := get(t, c, "start")
			if resp != nil {
				t.Fatal("a response came back with the error")
			}
			ue := wantKind(t, err, KindRedirect)
			if ue.Status != status {
				t.Errorf("status = %d, want %d", ue.Status, status)
			}
			if strings.Contains(err.Error(), target.URL) || strings.Contains(err.Error(), "secret") {
				t.Errorf("error names the Location: %v", err)
			}
			if origin.n.Load() != 1 {
				t.Errorf("origin saw %d requests, want 1", origin.n.Load())
			}
			if len(obs.kinds) != 1 || obs.kinds[0] != KindRedirect {
				t.Errorf("observed %v", obs.kinds)
			}
		})
	}
	t.Run("same-origin Location is not followed either", func(t *testing.T) {
		origin := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		})
		_, err := get(t, clientFor(t, origin.URL, nil), "start")
		wantKind(t, err, KindRedirect)
		if origin.n.Load() != 1 {
			t.Fatalf("origin saw %d requests", origin.n.Load())
		}
	})
	if target.n.Load() != 0 {
		t.Fatalf("redirect target saw %d requests", target.n.Load())
	}
}

func TestDoEncoding(t *testing.T) {
	noLeaks(t)
	cases := []struct {
		name     string
		encoding []string
		framing  bool
	}{
		{"none", nil, false},
		{"identity", []string{"identity"}, false},
		{"IDENTITY", []string{"IDENTITY"}, false},
		{"gzip", []string{"gzip"}, true},
		{"br", []string{"br"}, true},
		{"gzip, identity", []string{"gzip, identity"}, true},
		{"two headers", []string{"identity", "identity"}, true},
		{"empty", []string{""}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gotAE []string
			srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
				gotAE = r.Header.Values("Accept-Encoding")
				for _, v := range tc.encoding {
					w.Header().Add("Content-Encoding", v)
				}
				_, _ = io.WriteString(w, "\x1f\x8b not really gzip")
			})
			c := clientFor(t, srv.URL, nil)
			req, _ := c.NewRequest(t.Context(), http.MethodGet, nil, nil, "x")
			req.Header.Set("Accept-Encoding", "gzip, br") // a caller's wish is overridden
			resp, err := c.Do(req)
			if len(gotAE) != 1 || gotAE[0] != "identity" {
				t.Errorf("Accept-Encoding sent = %q, want identity", gotAE)
			}
			if tc.framing {
				wantKind(t, err, KindFraming)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "\x1f\x8b not really gzip" {
				t.Fatalf("body altered: %q", b)
			}
		})
	}
}

func TestDoTimeouts(t *testing.T) {
	noLeaks(t)
	release := make(chan struct{})
	defer close(release)
	wait := func(r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	t.Run("headers never come", func(t *testing.T) {
		srv := newCounted(t, func(_ http.ResponseWriter, r *http.Request) { wait(r) })
		obs := &observed{}
		start := time.Now()
		_, err := get(t, clientFor(t, srv.URL, obs), "x")
		wantKind(t, err, KindTimeout)
		if d := time.Since(start); d > 10*testTimeout {
			t.Errorf("took %v", d)
		}
		if len(obs.kinds) != 1 || obs.kinds[0] != KindTimeout {
			t.Errorf("observed %v", obs.kinds)
		}
	})
	t.Run("body stalls", func(t *testing.T) {
		srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, "first bytes")
			w.(http.Flusher).Flush()
			wait(r)
		})
		resp, err := get(t, clientFor(t, srv.URL, nil), "x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		wantKind(t, err, KindTimeout)
		if string(b) != "first bytes" {
			t.Errorf("read %q before the stall", b)
		}
	})
	t.Run("slow but flowing body longer than the timeout", func(t *testing.T) {
		// A wide margin between the gaps and the timeout keeps this
		// honest on a loaded machine; the total still exceeds the timeout.
		const timeout, gap, chunks = time.Second, 50 * time.Millisecond, 30
		srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
			for i := range chunks {
				if i > 0 {
					time.Sleep(gap)
				}
				_, _ = w.Write(bytes.Repeat([]byte{'a' + byte(i)}, 1024))
				w.(http.Flusher).Flush()
			}
		})
		c := New(Config{Name: "test", Origin: mustOrigin(t, srv.URL), IOTimeout: timeout})
		t.Cleanup(c.hc.CloseIdleConnections)
		start := time.Now()
		resp, err := get(t, c, "x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read after %v: %v", time.Since(start), err)
		}
		if len(b) != chunks*1024 {
			t.Fatalf("read %d bytes", len(b))
		}
		if d := time.Since(start); d <= timeout {
			t.Fatalf("the body took only %v; the test proves nothing", d)
		}
	})
	t.Run("slow headers within the timeout", func(t *testing.T) {
		srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(testTimeout / 3)
			_, _ = io.WriteString(w, "ok")
		})
		resp, err := get(t, clientFor(t, srv.URL, nil), "x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
}

func TestDoConnectionFailures(t *testing.T) {
	noLeaks(t)
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		obs := &observed{}
		_, err = get(t, clientFor(t, "http://"+addr, obs), "x")
		wantKind(t, err, KindUnavailable)
		if len(obs.kinds) != 1 || obs.kinds[0] != KindUnavailable {
			t.Errorf("observed %v", obs.kinds)
		}
	})
	// reset answers each connection with respond (maybe nothing), then a TCP RST.
	reset := func(t *testing.T, respond string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		t.Cleanup(func() { ln.Close(); wg.Wait() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 4096)
				_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, _ = conn.Read(buf)
				_, _ = io.WriteString(conn, respond)
				_ = conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		}()
		return "http://" + ln.Addr().String()
	}
	t.Run("reset before headers", func(t *testing.T) {
		_, err := get(t, clientFor(t, reset(t, ""), nil), "x")
		wantKind(t, err, KindUnavailable)
	})
	t.Run("reset inside the body", func(t *testing.T) {
		resp, err := get(t, clientFor(t, reset(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"), nil), "x")
		if err != nil {
			// The RST may overtake the buffered response; either way it is unavailable.
			wantKind(t, err, KindUnavailable)
			return
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		wantKind(t, err, KindUnavailable)
	})
	t.Run("truncated body, clean close", func(t *testing.T) {
		srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, "short")
			// Returning early makes net/http close the connection.
		})
		resp, err := get(t, clientFor(t, srv.URL, nil), "x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		wantKind(t, err, KindUnavailable)
	})
}

func TestDoCallerContext(t *testing.T) {
	noLeaks(t)
	srv := newCounted(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	// The I/O timeout is far away: only the caller's deadline can end the wait.
	c := New(Config{Name: "test", Origin: mustOrigin(t, srv.URL), IOTimeout: time.Minute})
	t.Cleanup(c.hc.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ := c.NewRequest(ctx, http.MethodGet, nil, nil, "x")
	start := time.Now()
	_, err := c.Do(req)
	if err == nil {
		t.Fatal("no error")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the caller's deadline was not honoured: %v", d)
	}
	wantKind(t, err, KindTimeout)
}

// TestReadBoundedInto: a buffer that holds the declared length is read
// into, and handed back as what was read; one too small is left alone
// for a new one; an unknown length starts in the buffer and grows out of
// it. The bytes are the answer's in every case, whatever the buffer held.
func TestReadBoundedInto(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789"), 70)
	for _, tc := range []struct {
		name     string
		capacity int
		declared int64
		reused   bool
	}{
		{"fits", 1024, 700, true},
		{"just fits", 701, 700, true},
		{"one short", 700, 700, false},
		{"undeclared, fits", 1024, -1, true},
		{"undeclared, too small", 100, -1, false},
		{"no buffer", 0, 700, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := bytes.Repeat([]byte{'X'}, tc.capacity)[:0]
			b, err := ReadBoundedInto(buf, iotest.HalfReader(bytes.NewReader(want)), 1000, tc.declared)
			if err != nil || !bytes.Equal(b, want) {
				t.Fatalf("read %q, %v", b, err)
			}
			if reused := cap(buf) > 0 && &b[:1][0] == &buf[:1][0]; reused != tc.reused {
				t.Fatalf("buffer reused: %v, want %v", reused, tc.reused)
			}
		})
	}
	if _, err := ReadBoundedInto(make([]byte, 0, 4096), bytes.NewReader(make([]byte, 1001)), 1000, -1); err == nil {
		t.Fatal("a body over the bound was read into a buffer that holds it")
	}
}

func TestReadBounded(t *testing.T) {
	const bound = 1000
	cases := []struct {
		name     string
		size     int
		declared int64
		large    bool
	}{
		{"empty", 0, -1, false},
		{"at the bound", bound, -1, false},
		{"one over", bound + 1, -1, true},
		{"far over", 10 * bound, -1, true},
		{"declared exactly", 700, 700, false},
		{"declared at the bound", bound, bound, false},
		{"declared too little", 700, 10, false},
		{"declared too much", 10, 900, false},
		{"declared over the bound", 10, 10 * bound, false},
		{"declared too little, over the bound", bound + 1, 10, true},
		{"declared at the bound, over it", 10 * bound, bound, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := bytes.Repeat([]byte("0123456789"), tc.size/10+1)[:tc.size]
			r := &countingReader{r: iotest.HalfReader(bytes.NewReader(want))}
			b, err := ReadBounded(r, bound, tc.declared)
			if tc.large {
				wantKind(t, err, KindTooLarge)
				if r.n > bound+1 {
					t.Fatalf("read %d bytes past the bound", r.n)
				}
				return
			}
			if err != nil || !bytes.Equal(b, want) {
				t.Fatalf("got %d bytes, %v", len(b), err)
			}
			if tc.declared == int64(tc.size) && cap(b) != tc.size+1 {
				t.Fatalf("a truthful declared length should size the buffer once: cap %d for %d bytes", cap(b), tc.size)
			}
		})
	}
	t.Run("reader error passes through", func(t *testing.T) {
		_, err := ReadBounded(io.MultiReader(strings.NewReader("x"), errReader{}), bound, -1)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v", err)
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestNewPanicsWithoutOrigin(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	New(Config{})
}

func TestErrorText(t *testing.T) {
	e := &Error{Kind: KindRedirect, Status: 302, Reason: "redirect refused", Err: io.EOF}
	if e.Error() != "upstream redirect (HTTP 302): redirect refused" || !errors.Is(e, io.EOF) {
		t.Fatalf("%q", e.Error())
	}
	if (&Error{Kind: KindTimeout, Reason: "r"}).Error() != "upstream timeout: r" {
		t.Fatal("no-status text")
	}
	if Kind(99).String() != "kind99" {
		t.Fatal(Kind(99).String())
	}
}
