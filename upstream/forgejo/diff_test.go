package forgejo_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// rawServer answers every connection with the bytes respond returns for
// the request head it read, then closes the connection. Unlike
// httptest.Server it can send any head at all: duplicate or malformed
// Content-Length, unknown transfer codings, a body shorter than announced.
type rawServer struct {
	ln    net.Listener
	mu    sync.Mutex
	heads []string
}

func startRaw(t *testing.T, respond func(head string) []byte) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				var head strings.Builder
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					head.WriteString(line)
					if line == "\r\n" {
						break
					}
				}
				s.mu.Lock()
				s.heads = append(s.heads, head.String())
				s.mu.Unlock()
				c.Write(respond(head.String()))
			})
		}
	})
	return s
}

func (s *rawServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.heads...)
}

func (s *rawServer) client(t *testing.T, ioTimeout time.Duration) *forgejo.Client {
	t.Helper()
	u, err := url.Parse("http://" + s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return forgejo.New(upstream.New(upstream.Config{Name: "forgejo", Origin: u, IOTimeout: ioTimeout}))
}

// sampleDiff is small, not UTF-8, and of a length with base64 padding.
var sampleDiff = []byte("diff --git a/f b/f\n+caf\xe9 <&>\n")

func sampleEntity() []byte { return et.Bytes(et.Sample(), sampleDiff) }

// answer builds a response: status line, the canonical evidence headers
// with changes (a key mapped to nil is dropped; extra lines are appended
// verbatim), and a body.
func answer(status string, drop []string, extra []string, body []byte) []byte {
	h := map[string]string{
		"Content-Type":   "application/json;charset=utf-8",
		"Cache-Control":  "private, no-store",
		"Accept-Ranges":  "none",
		"Content-Length": strconv.Itoa(len(body)),
	}
	for _, k := range drop {
		delete(h, k)
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + status + "\r\nConnection: close\r\n")
	for _, k := range []string{"Content-Type", "Cache-Control", "Accept-Ranges", "Content-Length"} {
		if v, ok := h[k]; ok {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	for _, l := range extra {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

func request() forgejo.DiffEvidenceRequest {
	return forgejo.DiffEvidenceRequest{Owner: "team", Repo: "project", Index: 7, Window: evidence.MaxWindow}
}

func codeOf(t *testing.T, err error) toolerr.Code {
	t.Helper()
	var te *toolerr.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *toolerr.Error", err, err)
	}
	return te.Code
}

// TestEvidenceFraming: every framing rule of
// docs/architecture.md#evidence-request-and-framing, with what HTTP itself
// allows (case, whitespace, split field lines, Via) accepted.
func TestEvidenceFraming(t *testing.T) {
	body := sampleEntity()
	n := strconv.Itoa(len(body))
	ok := toolerr.Code("")
	cases := []struct {
		name string
		resp []byte
		want toolerr.Code
	}{
		{name: "canonical", resp: answer("200 OK", nil, nil, body), want: ok},
		{name: "charset UTF-8 with space", resp: answer("200 OK", []string{"Content-Type"}, []string{"Content-Type: application/json; charset=UTF-8"}, body), want: ok},
		{name: "no charset", resp: answer("200 OK", []string{"Content-Type"}, []string{"Content-Type: application/json"}, body), want: ok},
		{name: "cache-control reordered, cased", resp: answer("200 OK", []string{"Cache-Control"}, []string{"Cache-Control: No-Store ,PRIVATE"}, body), want: ok},
		{name: "cache-control on two lines", resp: answer("200 OK", []string{"Cache-Control"}, []string{"Cache-Control: private", "Cache-Control: no-store"}, body), want: ok},
		{name: "repeated Via", resp: answer("200 OK", nil, []string{"Via: 1.1 a", "Via: 1.1 b"}, body), want: ok},
		{name: "accept-ranges None", resp: answer("200 OK", []string{"Accept-Ranges"}, []string{"Accept-Ranges: None"}, body), want: ok},

		{name: "no content type", resp: answer("200 OK", []string{"Content-Type"}, nil, body), want: toolerr.EvidenceFraming},
		// A non-JSON media type is how a stock forge answers: it lacks the
		// extension, which is not a framing fault.
		{name: "text/plain", resp: answer("200 OK", []string{"Content-Type"}, []string{"Content-Type: text/plain"}, body), want: toolerr.ForgeUnsupported},
		{name: "text/html", resp: answer("200 OK", []string{"Content-Type"}, []string{"Content-Type: text/html; charset=utf-8"}, body), want: toolerr.ForgeUnsupported},
		{name: "latin-1 charset", resp: answer("200 OK", []string{"Content-Type"}, []string{"Content-Type: application/json; charset=latin1"}, body), want: toolerr.EvidenceFraming},
		{name: "two content types", resp: answer("200 OK", nil, []string{"Content-Type: application/json"}, body), want: toolerr.EvidenceFraming},
		{name: "no cache-control", resp: answer("200 OK", []string{"Cache-Control"}, nil, body), want: toolerr.EvidenceFraming},
		{name: "no-store only", resp: answer("200 OK", []string{"Cache-Control"}, []string{"Cache-Control: no-store"}, body), want: toolerr.EvidenceFraming},
		{name: "cache-control with max-age", resp: answer("200 OK", []string{"Cache-Control"}, []string{"Cache-Control: private, no-store, max-age=0"}, body), want: toolerr.EvidenceFraming},
		{name: "cache-control argument", resp: answer("200 OK", []string{"Cache-Control"}, []string{`Cache-Control: private="x", no-store`}, body), want: toolerr.EvidenceFraming},
		{name: "cache-control repeated", resp: answer("200 OK", []string{"Cache-Control"}, []string{"Cache-Control: private, private, no-store"}, body), want: toolerr.EvidenceFraming},
		{name: "Forgejo's usual cache-control", resp: answer("200 OK", []string{"Cache-Control"}, []string{"Cache-Control: max-age=0, private, must-revalidate, no-transform"}, body), want: toolerr.EvidenceFraming},
		{name: "no accept-ranges", resp: answer("200 OK", []string{"Accept-Ranges"}, nil, body), want: toolerr.EvidenceFraming},
		{name: "accept-ranges bytes", resp: answer("200 OK", []string{"Accept-Ranges"}, []string{"Accept-Ranges: bytes"}, body), want: toolerr.EvidenceFraming},
		{name: "accept-ranges none and bytes", resp: answer("200 OK", nil, []string{"Accept-Ranges: bytes"}, body), want: toolerr.EvidenceFraming},
		{name: "content-range", resp: answer("200 OK", nil, []string{"Content-Range: bytes 0-" + n + "/*"}, body), want: toolerr.EvidenceFraming},
		{name: "content-encoding gzip", resp: answer("200 OK", nil, []string{"Content-Encoding: gzip"}, body), want: toolerr.EvidenceFraming},
		{name: "content-encoding identity", resp: answer("200 OK", nil, []string{"Content-Encoding: identity"}, body), want: toolerr.EvidenceFraming},
		{name: "no content-length", resp: answer("200 OK", []string{"Content-Length"}, nil, body), want: toolerr.EvidenceFraming},
		{name: "leading zero", resp: answer("200 OK", []string{"Content-Length"}, []string{"Content-Length: 0" + n}, body), want: toolerr.EvidenceFraming},
		{name: "plus sign", resp: answer("200 OK", []string{"Content-Length"}, []string{"Content-Length: +" + n}, body), want: toolerr.EvidenceFraming},
		{name: "two different lengths", resp: answer("200 OK", nil, []string{"Content-Length: 0" + n}, body), want: toolerr.EvidenceFraming},
		{name: "list in one line", resp: answer("200 OK", []string{"Content-Length"}, []string{"Content-Length: " + n + ", " + n}, body), want: toolerr.EvidenceFraming},
		{name: "chunked", resp: answer("200 OK", []string{"Content-Length"}, []string{"Transfer-Encoding: chunked"},
			[]byte(fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body))), want: toolerr.EvidenceFraming},
		{name: "chunked and a length", resp: answer("200 OK", nil, []string{"Transfer-Encoding: chunked"},
			[]byte(fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body))), want: toolerr.EvidenceFraming},
		{name: "unknown transfer coding", resp: answer("200 OK", []string{"Content-Length"}, []string{"Transfer-Encoding: gzip, chunked"}, body), want: toolerr.EvidenceFraming},
		{name: "length over the body", resp: answer("200 OK", []string{"Content-Length"}, []string{"Content-Length: " + strconv.Itoa(len(body)+10)}, body), want: toolerr.EvidenceFraming},
		{name: "length under the body", resp: answer("200 OK", []string{"Content-Length"}, []string{"Content-Length: " + strconv.Itoa(len(body)-10)}, body), want: toolerr.EvidenceMalformed},

		{name: "401", resp: answer("401 Unauthorized", nil, nil, []byte(`{"message":"secret-body"}`)), want: toolerr.UpstreamUnauthorized},
		{name: "403", resp: answer("403 Forbidden", nil, nil, []byte(`{}`)), want: toolerr.Forbidden},
		{name: "404", resp: answer("404 Not Found", nil, nil, []byte(`{}`)), want: toolerr.NotFound},
		{name: "409", resp: answer("409 Conflict", nil, nil, []byte(`{}`)), want: toolerr.EvidenceUnavailable},
		{name: "422", resp: answer("422 Unprocessable Entity", nil, nil, []byte(`{}`)), want: toolerr.EvidenceUnavailable},
		{name: "503", resp: answer("503 Service Unavailable", nil, nil, []byte(`{}`)), want: toolerr.EvidenceUnavailable},
		{name: "206", resp: answer("206 Partial Content", nil, []string{"Content-Range: bytes 0-9/" + n}, body[:10]), want: toolerr.EvidenceUnavailable},
		{name: "redirect", resp: []byte("HTTP/1.1 302 Found\r\nLocation: https://evil.example/x\r\nContent-Length: 0\r\n\r\n"), want: toolerr.RedirectRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startRaw(t, func(string) []byte { return c.resp })
			v, err := s.client(t, 5*time.Second).PullDiffEvidence(context.Background(), upstream.Credential{Token: "tok"}, request())
			if c.want == ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !bytes.Equal(v.Window, sampleDiff) {
					t.Fatalf("window %q", v.Window)
				}
				return
			}
			if v != nil {
				t.Fatalf("a window was returned with a %s fault", c.want)
			}
			if got := codeOf(t, err); got != c.want {
				t.Fatalf("code %s (%v), want %s", got, err, c.want)
			}
			msg := toolerr.As(err).Message
			if strings.Contains(msg, "secret-body") || strings.Contains(msg, "evil.example") || strings.Contains(msg, n) {
				t.Fatalf("message leaks a body or header value: %q", msg)
			}
		})
	}
}

// TestEvidenceDuplicateContentLength: the evidence framing wants one
// canonical Content-Length line
// (docs/architecture.md#evidence-request-and-framing). Over HTTP/1.1 net/http
// merges repeated identical lines into one before any header is visible, so
// the strict transport counts them on the connection: two lines are
// evidence_framing whether they agree and however they are spelled; one line
// in any spelling is read. Over HTTP/2 the repeated field stays visible in
// the header, which the transport and CheckEvidenceFraming (below) both
// refuse.
func TestEvidenceDuplicateContentLength(t *testing.T) {
	body := sampleEntity()
	n := strconv.Itoa(len(body))
	for _, c := range []struct {
		name  string
		lines []string
		want  toolerr.Code
	}{
		{"one line", []string{"Content-Length: " + n}, ""},
		{"one line, lower case", []string{"content-length: " + n}, ""},
		{"two identical lines", []string{"Content-Length: " + n, "Content-Length: " + n}, toolerr.EvidenceFraming},
		{"two lines, other spellings", []string{"content-length: " + n, "CONTENT-LENGTH: " + n}, toolerr.EvidenceFraming},
		{"two differing lines", []string{"Content-Length: " + n, "Content-Length: 1" + n}, toolerr.EvidenceFraming},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startRaw(t, func(string) []byte { return answer("200 OK", []string{"Content-Length"}, c.lines, body) })
			v, err := s.client(t, 5*time.Second).PullDiffEvidence(context.Background(), upstream.Credential{}, request())
			if c.want == "" {
				if err != nil || !bytes.Equal(v.Window, sampleDiff) {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if v != nil || codeOf(t, err) != c.want {
				t.Fatalf("got %v, want %s", err, c.want)
			}
			if msg := toolerr.As(err).Message; strings.Contains(msg, n) {
				t.Fatalf("the message quotes a header value: %q", msg)
			}
		})
	}
	resp := &http.Response{
		Header: http.Header{
			"Content-Type": {"application/json"}, "Cache-Control": {"private, no-store"}, "Accept-Ranges": {"none"},
			"Content-Length": {n, n},
		},
		ContentLength: -1, // what the HTTP/2 transport sets for a repeated length
	}
	if err := forgejo.CheckEvidenceFraming(resp); err == nil || err.Code != toolerr.EvidenceFraming {
		t.Fatalf("a visible duplicate Content-Length passed: %v", err)
	}
	resp.ContentLength = int64(len(body))
	if err := forgejo.CheckEvidenceFraming(resp); err == nil {
		t.Fatal("two Content-Length values passed")
	}
}

// TestEvidenceRequest: exactly one GET of the fixed route with the query,
// Accept and the caller's credential.
func TestEvidenceRequest(t *testing.T) {
	body := sampleEntity()
	s := startRaw(t, func(string) []byte { return answer("200 OK", nil, nil, body) })
	c := s.client(t, 5*time.Second)
	if _, err := c.PullDiffEvidence(context.Background(), upstream.Credential{Token: "caller-token"}, request()); err != nil {
		t.Fatal(err)
	}
	heads := s.requests()
	if len(heads) != 1 {
		t.Fatalf("%d requests", len(heads))
	}
	h := heads[0]
	for _, want := range []string{
		"GET /api/v1/repos/team/project/pulls/7.diff?binary=true&evidence=v1 HTTP/1.1\r\n",
		"\r\nAccept: application/json\r\n",
		"\r\nAuthorization: Bearer caller-token\r\n",
		"\r\nAccept-Encoding: identity\r\n",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("request lacks %q:\n%s", want, h)
		}
	}
	// Path segments are escaped one by one, never concatenated.
	r := request()
	r.Repo = "a?b"
	_, _ = c.PullDiffEvidence(context.Background(), upstream.Credential{}, r)
	if heads = s.requests(); !strings.HasPrefix(heads[1], "GET /api/v1/repos/team/a%3Fb/pulls/7.diff?") {
		t.Fatalf("escaped request: %q", heads[1])
	}
}

// TestEvidenceNamesTheRepository: the entity must name the requested
// repository; Forgejo's names compare without regard to case.
func TestEvidenceNamesTheRepository(t *testing.T) {
	for _, c := range []struct {
		owner, name string
		want        toolerr.Code
	}{
		{"team", "project", ""},
		{"Team", "PROJECT", ""},
		{"team", "other", toolerr.EvidenceMalformed},
		{"other", "project", toolerr.EvidenceMalformed},
	} {
		e := et.Sample()
		e.Owner, e.Name = c.owner, c.name
		body := et.Bytes(e, sampleDiff)
		s := startRaw(t, func(string) []byte { return answer("200 OK", nil, nil, body) })
		v, err := s.client(t, 5*time.Second).PullDiffEvidence(context.Background(), upstream.Credential{}, request())
		if c.want == "" {
			if err != nil {
				t.Errorf("%s/%s: %v", c.owner, c.name, err)
			}
			continue
		}
		if v != nil || codeOf(t, err) != c.want {
			t.Errorf("%s/%s: got %v, want %s", c.owner, c.name, err, c.want)
		}
	}
}

// TestEvidenceStalledBody: the I/O timeout applies to each read; a body
// that stops flowing is upstream_timeout, with no window.
func TestEvidenceStalledBody(t *testing.T) {
	body := sampleEntity()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadString('\n')
		resp := answer("200 OK", nil, nil, body)
		c.Write(resp[:len(resp)-20])
		<-release
	}()
	u, _ := url.Parse("http://" + ln.Addr().String())
	c := forgejo.New(upstream.New(upstream.Config{Name: "forgejo", Origin: u, IOTimeout: 300 * time.Millisecond}))
	v, err := c.PullDiffEvidence(context.Background(), upstream.Credential{}, request())
	if v != nil || codeOf(t, err) != toolerr.UpstreamTimeout {
		t.Fatalf("got %v, want upstream_timeout", err)
	}
}
