// Package hostile is an HTTP/1.1 upstream that misbehaves on purpose, at
// the level of bytes on the connection: bodies that stall or are reset
// after a valid prefix, more bytes than Content-Length, endless headers,
// a thousand Via headers, slow drips. The gateway's hostile-upstream tests
// point each strict client path (Forgejo anonymous reads, grants, diff
// evidence; GitHub Contents, token mint) at it and require a clean error
// with its code and no goroutine left behind.
//
// It is a raw TCP server rather than an httptest.Server because net/http
// refuses to write most of these answers.
package hostile

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Answer is a well-formed response to misbehave with: status, headers and
// body. Content-Length is added from the body unless Header sets it.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// TwoLengths returns a with its true Content-Length sent twice, as two
// identical field lines: a framing net/http merges into one before the
// header is visible, and the one canonical Content-Length of
// docs/architecture.md#evidence-request-and-framing refuses.
func TwoLengths(a Answer) Answer {
	a.Header = a.Header.Clone()
	if a.Header == nil {
		a.Header = http.Header{}
	}
	n := strconv.Itoa(len(a.Body))
	a.Header["Content-Length"] = []string{n, n}
	return a
}

// head renders the status line and headers, with extra header lines.
func (a Answer) head(extra ...string) string {
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	h := a.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if _, ok := h["Content-Length"]; !ok {
		h.Set("Content-Length", strconv.Itoa(len(a.Body)))
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	for _, l := range extra {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// Behaviour answers one request on a connection. It returns when it is
// done with the connection; the server then closes it. done is closed when
// the server shuts down, so a behaviour that waits must also wait on it.
type Behaviour func(conn net.Conn, req *http.Request, done <-chan struct{})

// Server is a running hostile upstream on a loopback port.
type Server struct {
	ln       net.Listener
	done     chan struct{}
	wg       sync.WaitGroup
	requests atomic.Int64
	mu       sync.Mutex
	conns    map[net.Conn]bool
	paths    []string
	// dropReused: see StartDropReused.
	dropReused bool
}

// Start serves b on 127.0.0.1 until the test ends; Close (also run at
// cleanup) closes every connection and waits for every goroutine, so a
// leak check after it sees only the client's goroutines.
func Start(t testing.TB, b Behaviour) *Server {
	t.Helper()
	return start(t, b, false)
}

// StartDropReused serves like Start, except that a connection is kept
// open after b answered its first request, and the second request on it
// is read whole (and counted, like every request) before the connection
// is closed without an answer: a forge closing a reused keep-alive
// connection just as the client sends on it. b must answer with the
// connection kept alive (no Connection: close). A client that sends a
// request only once sees the second call fail; one whose transport
// re-sends it on a new connection makes the server count an extra request
// and gets that connection's first answer.
func StartDropReused(t testing.TB, b Behaviour) *Server {
	t.Helper()
	return start(t, b, true)
}

func start(t testing.TB, b Behaviour, dropReused bool) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, done: make(chan struct{}), conns: map[net.Conn]bool{}, dropReused: dropReused}
	s.wg.Add(1)
	go s.accept(b)
	t.Cleanup(s.Close)
	return s
}

// URL is the server's origin.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Requests counts the requests the server read.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// Paths are the escaped paths of the requests read, in order.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// Close stops the server and waits for its goroutines.
func (s *Server) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) accept(b Behaviour) {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[conn] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				conn.Close()
			}()
			// One answered request per connection: every behaviour ends the
			// exchange, so each request meets the behaviour afresh.
			br := bufio.NewReader(conn)
			req := s.read(br)
			if req == nil {
				return
			}
			b(conn, req, s.done)
			if s.dropReused {
				// The next request on the kept-alive connection is read
				// whole and counted, then the connection is closed on it.
				s.read(br)
			}
		}()
	}
}

// read reads one request and its body and counts it; nil when the
// connection ended first.
func (s *Server) read(br *bufio.Reader) *http.Request {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil
	}
	_, _ = io.Copy(io.Discard, req.Body)
	s.requests.Add(1)
	s.mu.Lock()
	s.paths = append(s.paths, req.URL.EscapedPath())
	s.mu.Unlock()
	return req
}

// closeOnDone closes conn when the server shuts down, until stop is
// called; a behaviour blocked on the connection is then released.
func closeOnDone(conn net.Conn, done <-chan struct{}) (stop func()) {
	ch := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-done:
			conn.Close()
		case <-ch:
		}
	}()
	return func() { close(ch); <-exited }
}

// waitClosed blocks until the peer closes the connection or the server
// shuts down, discarding anything the peer sends.
func waitClosed(conn net.Conn, done <-chan struct{}) {
	defer closeOnDone(conn, done)()
	_, _ = io.Copy(io.Discard, conn)
}

// Respond sends a well-formed answer.
func Respond(a Answer) Behaviour {
	return func(conn net.Conn, _ *http.Request, _ <-chan struct{}) {
		_, _ = io.WriteString(conn, a.head()+string(a.Body))
	}
}

// StallMidBody sends the headers (with the full Content-Length) and the
// first prefix bytes of the body, then sends nothing more until the client
// gives up.
func StallMidBody(a Answer, prefix int) Behaviour {
	return func(conn net.Conn, _ *http.Request, done <-chan struct{}) {
		_, _ = io.WriteString(conn, a.head()+string(a.Body[:prefix]))
		waitClosed(conn, done)
	}
}

// ResetAfterPrefix sends the headers and prefix bytes of the body, then
// resets the connection (TCP RST: SO_LINGER 0).
func ResetAfterPrefix(a Answer, prefix int) Behaviour {
	return func(conn net.Conn, _ *http.Request, _ <-chan struct{}) {
		_, _ = io.WriteString(conn, a.head()+string(a.Body[:prefix]))
		time.Sleep(20 * time.Millisecond) // let the prefix travel ahead of the reset
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
}

// TruncateAfterPrefix sends the headers and prefix bytes of the body,
// then closes the connection cleanly (FIN) short of Content-Length.
func TruncateAfterPrefix(a Answer, prefix int) Behaviour {
	return func(conn net.Conn, _ *http.Request, _ <-chan struct{}) {
		_, _ = io.WriteString(conn, a.head()+string(a.Body[:prefix]))
	}
}

// ExtraBytes sends the answer with its true Content-Length and then extra
// bytes in the same write, and keeps the connection open until the client
// closes it: the surplus sits in the client's buffer past the framed body.
func ExtraBytes(a Answer, extra []byte) Behaviour {
	return func(conn net.Conn, _ *http.Request, done <-chan struct{}) {
		_, _ = io.WriteString(conn, a.head()+string(a.Body)+string(extra))
		waitClosed(conn, done)
	}
}

// EndlessHeaders sends a status line and then header lines for as long as
// the client reads them.
func EndlessHeaders() Behaviour {
	return func(conn net.Conn, _ *http.Request, done <-chan struct{}) {
		defer closeOnDone(conn, done)()
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
		line := "X-Padding-%d: " + strings.Repeat("a", 1000) + "\r\n"
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(conn, line, i); err != nil {
				return
			}
		}
	}
}

// ManyVia sends the answer with n Via header lines of about width bytes
// each (at least the bare "1.1 proxy-N" token).
func ManyVia(a Answer, n, width int) Behaviour {
	return func(conn net.Conn, _ *http.Request, _ <-chan struct{}) {
		lines := make([]string, n)
		for i := range lines {
			v := fmt.Sprintf("Via: 1.1 proxy-%d.example", i)
			if pad := width - len(v); pad > 0 {
				v += " (" + strings.Repeat("p", pad) + ")"
			}
			lines[i] = v
		}
		_, _ = io.WriteString(conn, a.head(lines...)+string(a.Body))
	}
}

// SlowDrip sends the headers at once and then the body chunk bytes at a
// time with gap between chunks.
func SlowDrip(a Answer, chunk int, gap time.Duration) Behaviour {
	return func(conn net.Conn, _ *http.Request, done <-chan struct{}) {
		if _, err := io.WriteString(conn, a.head()); err != nil {
			return
		}
		for b := a.Body; len(b) > 0; {
			n := min(chunk, len(b))
			if _, err := conn.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
			select {
			case <-done:
				return
			case <-time.After(gap):
			}
		}
	}
}

// EndlessDrip sends the headers with Content-Length declared (more than it
// will ever send, within the client's bound), the body, then one byte of
// filler every gap, forever: each read makes progress within any I/O
// timeout longer than gap, so only the caller's own deadline can end the
// exchange.
func EndlessDrip(a Answer, declared int, gap time.Duration) Behaviour {
	a.Header = a.Header.Clone()
	if a.Header == nil {
		a.Header = http.Header{}
	}
	a.Header.Set("Content-Length", strconv.Itoa(declared))
	return func(conn net.Conn, _ *http.Request, done <-chan struct{}) {
		if _, err := io.WriteString(conn, a.head()+string(a.Body)); err != nil {
			return
		}
		for {
			select {
			case <-done:
				return
			case <-time.After(gap):
			}
			if _, err := io.WriteString(conn, " "); err != nil {
				return
			}
		}
	}
}

// Nested wraps inner in depth JSON arrays: [[[…inner…]]].
func Nested(inner string, depth int) string {
	return strings.Repeat("[", depth) + inner + strings.Repeat("]", depth)
}

// ByPath answers requests whose path starts with prefix with b, and any
// other request with other: a hostile route behind a well-behaved one
// (GitHub's token route before its Contents route).
func ByPath(prefix string, b, other Behaviour) Behaviour {
	return func(conn net.Conn, req *http.Request, done <-chan struct{}) {
		if strings.HasPrefix(req.URL.Path, prefix) {
			b(conn, req, done)
			return
		}
		other(conn, req, done)
	}
}

// LeakOptions make a goroutine leak check ignore the server's own
// goroutines, so that a test can check for leaks while the server still
// misbehaves (before Close ends its connections, which would also end a
// client goroutine stuck on one).
func (s *Server) LeakOptions() []goleak.Option {
	const pkg = "github.com/agent-gateway/agent-gateway/test/hostile."
	return []goleak.Option{
		goleak.IgnoreAnyFunction(pkg + "(*Server).accept"),
		goleak.IgnoreAnyFunction(pkg + "(*Server).accept.func1"),
		goleak.IgnoreAnyFunction(pkg + "closeOnDone.func1"),
	}
}
