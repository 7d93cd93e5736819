package forgejoemu

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const repoPath = "/api/v1/repos/demo/gateway"

// TestNoFaultFraming checks the default framing: exact Content-Length, no
// chunking, no compression even when the client offers gzip.
func TestNoFaultFraming(t *testing.T) {
	t.Parallel()
	e, _ := sharedDemo(t)
	for _, path := range []string{repoPath, repoPath + "/pulls", repoPath + "/pulls/1", "/api/v1/repos/search", "/api/v1/repos/demo/missing"} {
		req, _ := http.NewRequest(http.MethodGet, e.URL()+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := plainClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Proto != "HTTP/1.1" || len(resp.TransferEncoding) != 0 || resp.Header.Get("Content-Encoding") != "" ||
			resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) || resp.ContentLength != int64(len(body)) {
			t.Errorf("%s: %s TE=%v CE=%q CL=%q for %d bytes", path, resp.Proto, resp.TransferEncoding,
				resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Length"), len(body))
		}
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	e := lightEmu(t)
	normal := get(t, e, repoPath, "").body

	tests := []struct {
		name  string
		fault Fault
		check func(t *testing.T, resp *http.Response, body []byte, readErr error, elapsed time.Duration)
	}{
		{"redirect", Fault{Kind: FaultRedirect}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != e.URL()+"/__redirected"+repoPath {
				t.Errorf("status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
			}
		}},
		{"redirect elsewhere", Fault{Kind: FaultRedirect, Location: "https://elsewhere.invalid/x"}, func(t *testing.T, resp *http.Response, _ []byte, _ error, _ time.Duration) {
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "https://elsewhere.invalid/x" {
				t.Errorf("status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
			}
		}},
		{"gzip", Fault{Kind: FaultGzip}, func(t *testing.T, resp *http.Response, body []byte, readErr error, _ time.Duration) {
			if readErr != nil {
				t.Fatal(readErr)
			}
			if resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength != int64(len(body)) {
				t.Fatalf("CE %q CL %d for %d bytes", resp.Header.Get("Content-Encoding"), resp.ContentLength, len(body))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(plain, normal) {
				t.Errorf("gunzipped body differs (%v)", err)
			}
		}},
		{"slow", Fault{Kind: FaultSlow, Delay: 200 * time.Millisecond}, func(t *testing.T, resp *http.Response, body []byte, err error, elapsed time.Duration) {
			if elapsed < 200*time.Millisecond || !bytes.Equal(body, normal) {
				t.Errorf("elapsed %v, body equal %v", elapsed, bytes.Equal(body, normal))
			}
		}},
		{"slow body", Fault{Kind: FaultSlowBody, Delay: 5 * time.Millisecond, ChunkBytes: 256}, func(t *testing.T, resp *http.Response, body []byte, err error, elapsed time.Duration) {
			// The emulator pauses after every chunk, but a client holding
			// the whole Content-Length is done before the last pause ends:
			// only the pauses between chunks are sure to have passed.
			chunks := (len(normal) + 255) / 256
			if err != nil || !bytes.Equal(body, normal) || elapsed < time.Duration(chunks-1)*5*time.Millisecond {
				t.Errorf("err %v, equal %v, elapsed %v for %d chunks", err, bytes.Equal(body, normal), elapsed, chunks)
			}
			if resp.ContentLength != int64(len(normal)) {
				t.Errorf("Content-Length %d, want %d", resp.ContentLength, len(normal))
			}
		}},
		{"reset", Fault{Kind: FaultReset}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
			if resp.ContentLength != int64(len(normal)) || err == nil || len(body) >= len(normal) {
				t.Errorf("CL %d, read %d bytes of %d, err %v", resp.ContentLength, len(body), len(normal), err)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Logf("read error: %v", err) // a reset is also acceptable
			}
			if !bytes.HasPrefix(normal, body) {
				t.Errorf("partial body is not a prefix of the normal body")
			}
		}},
		{"reset after 10 bytes", Fault{Kind: FaultReset, PartialBytes: 10}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
			if err == nil || len(body) > 10 {
				t.Errorf("read %d bytes, err %v", len(body), err)
			}
		}},
		{"status 503", Fault{Kind: FaultStatus, Status: 503}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
			a := answer{body: body}
			got := decode[apiError](t, a)
			if resp.StatusCode != 503 || got.Message != "Service Unavailable" || resp.ContentLength != int64(len(body)) {
				t.Errorf("status %d body %s", resp.StatusCode, body)
			}
		}},
		{"status with a body", Fault{Kind: FaultStatus, Status: 409, Body: []byte("conflict!")}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
			if resp.StatusCode != 409 || string(body) != "conflict!" {
				t.Errorf("status %d body %q", resp.StatusCode, body)
			}
		}},
		{"chunked", Fault{Kind: FaultChunked, ChunkBytes: 100}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
			if resp.ContentLength != -1 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || !bytes.Equal(body, normal) {
				t.Errorf("CL %d TE %v equal %v", resp.ContentLength, resp.TransferEncoding, bytes.Equal(body, normal))
			}
		}},
		{"headers", Fault{Kind: FaultHeaders, Header: http.Header{"Content-Type": {"text/plain"}, "x-extra": {"1", "2"}, "Cache-Control": nil}},
			func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
				h := resp.Header
				if h.Get("Content-Type") != "text/plain" || len(h.Values("X-Extra")) != 2 || h.Get("Cache-Control") != "" || !bytes.Equal(body, normal) {
					t.Errorf("headers %v", h)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.SetFault(repoPath, tt.fault)
			defer e.ClearFaults()
			start := time.Now()
			resp, err := plainClient().Get(e.URL() + repoPath)
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			body, readErr := io.ReadAll(resp.Body)
			resp.Body.Close()
			tt.check(t, resp, body, readErr, time.Since(start))
		})
	}
}

// TestFaultScope checks prefixes, precedence, Times and clearing.
func TestFaultScope(t *testing.T) {
	t.Parallel()
	e := lightEmu(t)
	status := func(path string) int { return get(t, e, path, "").status }

	e.SetFault("/api/v1/repos/search", Fault{Kind: FaultStatus, Status: 500})
	if s := status(repoPath); s != 200 {
		t.Errorf("unrelated route: %d", s)
	}
	if s := status("/api/v1/repos/search?q=x"); s != 500 {
		t.Errorf("faulted route: %d", s)
	}
	e.SetFault("", Fault{Kind: FaultStatus, Status: 503})
	if s := status(repoPath); s != 503 {
		t.Errorf("all routes: %d", s)
	}
	if s := status("/api/v1/repos/search"); s != 500 {
		t.Errorf("the longest prefix wins: %d", s)
	}
	e.SetFault("", Fault{}) // FaultNone clears a prefix
	if s := status(repoPath); s != 200 {
		t.Errorf("cleared prefix: %d", s)
	}
	e.ClearFaults()
	if s := status("/api/v1/repos/search"); s != 200 {
		t.Errorf("after ClearFaults: %d", s)
	}
	e.SetFault(repoPath+"/pulls", Fault{Kind: FaultStatus, Status: 502, Times: 2})
	for i, want := range []int{502, 502, 200} {
		if s := status(repoPath + "/pulls"); s != want {
			t.Errorf("request %d: %d, want %d", i+1, s, want)
		}
	}
}

// TestSlowFaultEndsWithClose checks that Close does not wait out a long delay.
func TestSlowFaultEndsWithClose(t *testing.T) {
	t.Parallel()
	e, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.SetFault("", Fault{Kind: FaultSlow, Delay: time.Hour})
	done := make(chan error, 1)
	go func() {
		resp, err := plainClient().Get(e.URL() + "/api/v1/repos/search")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("request still hanging after Close")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Close took %v", time.Since(start))
	}
}

// rawExchange sends one GET over a fresh connection and returns everything
// the emulator sent until it closed the connection (or 64 KiB + 1 for an
// endless answer).
func rawExchange(t *testing.T, e *Emulator, path string) []byte {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(io.LimitReader(conn, 64<<10+1))
	return b
}

// TestHostileFaults: the byte-level faults of the hostile-upstream tests
// send what they promise on the wire.
func TestHostileFaults(t *testing.T) {
	t.Parallel()
	e := lightEmu(t)
	normal := get(t, e, repoPath, "").body
	t.Run("extra bytes", func(t *testing.T) {
		e.SetFault(repoPath, Fault{Kind: FaultExtraBytes, Body: []byte("SURPLUS"), Times: 1})
		raw := rawExchange(t, e, repoPath)
		if !bytes.HasSuffix(raw, append(append([]byte(nil), normal...), "SURPLUS"...)) ||
			!bytes.Contains(raw, []byte("Content-Length: "+strconv.Itoa(len(normal))+"\r\n")) {
			t.Fatalf("wire: %q", raw)
		}
	})
	t.Run("endless headers", func(t *testing.T) {
		e.SetFault(repoPath, Fault{Kind: FaultEndlessHeaders, Times: 1})
		raw := rawExchange(t, e, repoPath)
		if len(raw) <= 64<<10 || bytes.Contains(raw, []byte("\r\n\r\n")) || !bytes.HasPrefix(raw, []byte("HTTP/1.1 200 OK\r\n")) {
			t.Fatalf("%d bytes, head ended: %v", len(raw), bytes.Contains(raw, []byte("\r\n\r\n")))
		}
	})
	t.Run("a thousand Via headers", func(t *testing.T) {
		via := make([]string, 1000)
		for i := range via {
			via[i] = "1.1 proxy-" + strconv.Itoa(i)
		}
		e.SetFault(repoPath, Fault{Kind: FaultHeaders, Header: http.Header{"Via": via}, Times: 1})
		resp, err := plainClient().Get(e.URL() + repoPath)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(resp.Header.Values("Via")) != 1000 || !bytes.Equal(body, normal) {
			t.Fatalf("%d Via values", len(resp.Header.Values("Via")))
		}
	})
}
