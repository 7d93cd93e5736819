package upstream

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// scriptServer is a raw TCP upstream on loopback that answers the n-th
// request it reads (over all connections) with answers[n], hand-written
// bytes, and keeps each connection open for the next request. It records
// every request's raw bytes and counts connections.
type scriptServer struct {
	ln      net.Listener
	answers []string
	mu      sync.Mutex
	raw     []string
	conns   int
	open    []net.Conn
}

func startScript(t *testing.T, answers ...string) *scriptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptServer{ln: ln, answers: answers}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.open {
			c.Close()
		}
		s.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.open = append(s.open, c)
			s.mu.Unlock()
			wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

func (s *scriptServer) serve(c net.Conn) {
	defer c.Close()
	var raw bytes.Buffer
	br := bufio.NewReader(io.TeeReader(c, &raw))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		// What the request took on the wire: everything read so far but
		// what bufio holds for the next one.
		s.mu.Lock()
		n := len(s.raw)
		s.raw = append(s.raw, string(raw.Next(raw.Len()-br.Buffered())))
		s.mu.Unlock()
		if n >= len(s.answers) {
			return
		}
		if _, err := io.WriteString(c, s.answers[n]); err != nil {
			return
		}
	}
}

func (s *scriptServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *scriptServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.raw...)
}

func (s *scriptServer) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// TestRequestOnTheWire: a GET goes out as a body-less request — no
// Content-Length, no Transfer-Encoding, nothing after the head — though
// sendOnce gives it a body of its own; a POST carries its payload with
// its length; both keep the connection alive.
func TestRequestOnTheWire(t *testing.T) {
	noLeaks(t)
	const good = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	srv := startScript(t, good, good, good)
	c := clientFor(t, srv.url(), nil)
	isJSON := func(string) bool { return true }
	for range 2 {
		if _, err := c.Exchange(t.Context(), Exchange{Segments: []string{"x"}, MaxBody: 10, IsJSON: isJSON}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Exchange(t.Context(), Exchange{Method: http.MethodPost, Segments: []string{"x"}, Payload: []byte(`{"a":1}`), MaxBody: 10, IsJSON: isJSON}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 3 || srv.connections() != 1 {
		t.Fatalf("%d requests on %d connections, want 3 on one", len(reqs), srv.connections())
	}
	for _, r := range reqs[:2] {
		lower := strings.ToLower(r)
		if !strings.HasPrefix(r, "GET /x HTTP/1.1\r\n") || !strings.HasSuffix(r, "\r\n\r\n") ||
			strings.Count(r, "\r\n\r\n") != 1 || strings.Contains(lower, "content-length") || strings.Contains(lower, "transfer-encoding") {
			t.Fatalf("the GET on the wire:\n%q", r)
		}
	}
	if post := reqs[2]; !strings.HasPrefix(post, "POST /x HTTP/1.1\r\n") || !strings.Contains(post, "\r\nContent-Length: 7\r\n") ||
		!strings.HasSuffix(post, "\r\n\r\n{\"a\":1}") || strings.Contains(strings.ToLower(post), "transfer-encoding") {
		t.Fatalf("the POST on the wire:\n%q", post)
	}
}

// TestSendOnce: whatever body a request came with, net/http is left no
// way to replay it.
func TestSendOnce(t *testing.T) {
	for name, req := range map[string]*http.Request{
		"nil body":    {Method: http.MethodGet},
		"http.NoBody": {Method: http.MethodGet, Body: http.NoBody, GetBody: func() (io.ReadCloser, error) { return http.NoBody, nil }},
		"payload": {Method: http.MethodPost, Body: io.NopCloser(strings.NewReader("x")), ContentLength: 1,
			GetBody: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }, Header: http.Header{"Idempotency-Key": {"k"}}},
	} {
		t.Run(name, func(t *testing.T) {
			sendOnce(req)
			if req.GetBody != nil || req.Body == nil || req.Body == http.NoBody {
				t.Fatalf("body %T, GetBody set %v: replayable", req.Body, req.GetBody != nil)
			}
		})
	}
	if n, err := (emptyBody{}).Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("emptyBody read %d, %v", n, err)
	}
}
