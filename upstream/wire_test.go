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
	serveScript(t, s)
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

// readAll GETs /x and reads the whole body.
func readAll(t *testing.T, c *Client) (string, error) {
	t.Helper()
	resp, err := get(t, c, "x")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestContentLengthLines: an answer whose head carries more than one
// Content-Length line is refused as framing, whatever the lines'
// spelling, whether they agree, and whatever the status; one line in any
// spelling is read. Over raw TCP, because net/http merges identical lines
// before any header is visible.
func TestContentLengthLines(t *testing.T) {
	noLeaks(t)
	head := func(status string, lines ...string) string {
		return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + strings.Join(lines, "\r\n") + "\r\n\r\n"
	}
	cases := []struct {
		name   string
		answer string
		ok     bool
	}{
		{"one line", head("200 OK", "Content-Length: 5") + "hello", true},
		{"one line, lower case", head("200 OK", "content-length: 5") + "hello", true},
		{"one line, upper case", head("200 OK", "CONTENT-LENGTH: 5") + "hello", true},
		{"chunked, no length", head("200 OK", "Transfer-Encoding: chunked") + "5\r\nhello\r\n0\r\n\r\n", true},
		{"two identical lines", head("200 OK", "Content-Length: 5", "Content-Length: 5") + "hello", false},
		{"two lines, other spellings", head("200 OK", "content-length: 5", "Content-Length: 5") + "hello", false},
		{"two lines apart", head("200 OK", "Content-Length: 5", "X-Other: 1", "CONTENT-LENGTH: 5") + "hello", false},
		{"two differing lines", head("200 OK", "Content-Length: 5", "Content-Length: 6") + "hello!", false},
		{"three lines", head("200 OK", "Content-Length: 5", "Content-Length: 5", "Content-Length: 5") + "hello", false},
		{"a list in one line", head("200 OK", "Content-Length: 5, 5") + "hello", false},
		{"two lines on an error status", head("404 Not Found", "Content-Length: 2", "Content-Length: 2") + "no", false},
		{"two lines in a 1xx head before the answer", "HTTP/1.1 103 Early Hints\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n" +
			head("200 OK", "Content-Length: 5") + "hello", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := startScript(t, c.answer)
			obs := &observed{}
			body, err := readAll(t, clientFor(t, srv.url(), obs))
			if c.ok {
				if err != nil || body != "hello" {
					t.Fatalf("got %q, %v; want the body", body, err)
				}
				return
			}
			ue := wantKind(t, err, KindFraming)
			if strings.Contains(ue.Error(), "hello") {
				t.Fatalf("the error quotes the answer: %v", ue)
			}
			if len(obs.kinds) != 1 || obs.kinds[0] != KindFraming {
				t.Fatalf("observed %v", obs.kinds)
			}
			if n := len(srv.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
}

// TestContentLengthOnReusedConnection: the count follows each answer on a
// kept-alive connection, across every body framing net/http reuses a
// connection after; a refused answer's connection is not used again.
func TestContentLengthOnReusedConnection(t *testing.T) {
	noLeaks(t)
	const good = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
	const dup = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"
	cases := []struct {
		name  string
		first string
	}{
		{"after a length", good},
		{"after a body that looks like a head", "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"},
		{"after chunks and a trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n0\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"},
		{"after 204", "HTTP/1.1 204 No Content\r\n\r\n"},
		{"after a 1xx head", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + good},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := startScript(t, c.first, good, dup, good)
			client := clientFor(t, srv.url(), nil)
			for i := range 2 {
				if _, err := readAll(t, client); err != nil {
					t.Fatalf("answer %d: %v", i+1, err)
				}
			}
			if n := srv.connections(); n != 1 {
				t.Fatalf("%d connections for two answers, want one kept alive", n)
			}
			_, err := readAll(t, client)
			wantKind(t, err, KindFraming)
			if body, err := readAll(t, client); err != nil || body != "hello" {
				t.Fatalf("after the refusal: %q, %v", body, err)
			}
			if n := srv.connections(); n != 2 {
				t.Fatalf("%d connections, want the refused answer's closed and one new", n)
			}
		})
	}
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

// TestHeadIsNeverSent: the connection's head count frames every answer
// by its head, which an answer to HEAD is not; the gateway has no HEAD
// request, and one is refused before it leaves.
func TestHeadIsNeverSent(t *testing.T) {
	noLeaks(t)
	srv := startScript(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
	c := clientFor(t, srv.url(), nil)
	req, err := c.NewRequest(t.Context(), http.MethodHead, nil, nil, "x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(req)
	wantKind(t, err, KindRequest)
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
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
