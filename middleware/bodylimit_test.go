package middleware

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rpcBody returns a JSON-RPC ping of exactly n bytes (padded inside a
// string member), so the MCP peek can parse it when it is within the limit.
func rpcBody(t *testing.T, n int) []byte {
	t.Helper()
	head, tail := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, `"}}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("body of %d bytes is too small", n)
	}
	return []byte(head + strings.Repeat("a", pad) + tail)
}

// unknownLength hides the length of a reader so the client sends it chunked.
type unknownLength struct{ io.Reader }

func TestBodyLimit(t *testing.T) {
	const limit = MaxBodyBytes
	if limit != 1<<20 {
		t.Fatalf("MaxBodyBytes = %d, want 1 MiB", limit)
	}
	chain := RequestID(BodyLimit(limit)(MCPPeek(ok)))
	srv := httptest.NewServer(chain)
	defer srv.Close()

	cases := []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"declared length at the limit", limit, false, http.StatusOK},
		{"declared length one over", limit + 1, false, http.StatusRequestEntityTooLarge},
		{"declared length far over", 4 * limit, false, http.StatusRequestEntityTooLarge},
		{"unknown length at the limit", limit, true, http.StatusOK},
		{"unknown length one over", limit + 1, true, http.StatusRequestEntityTooLarge},
		{"unknown length far over", 4 * limit, true, http.StatusRequestEntityTooLarge},
		{"small", 100, false, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := rpcBody(t, tc.size)
			var rd io.Reader = bytes.NewReader(body)
			if tc.chunked {
				rd = unknownLength{rd}
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL, rd)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if tc.chunked != (req.ContentLength <= 0) {
				t.Fatalf("request ContentLength = %d, chunked = %v", req.ContentLength, tc.chunked)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d (body %s)", resp.StatusCode, tc.want, got)
			}
			if tc.want == http.StatusRequestEntityTooLarge {
				// The peeked call has id 1 only when the body was read whole;
				// an over-limit body is never parsed, so the plain body is used.
				e := errorBody(t, string(got))
				if e["code"] != "body_too_large" {
					t.Errorf("code = %v, want body_too_large", e["code"])
				}
			}
		})
	}
}

// TestBodyLimitInProcess drives the middleware directly, with ContentLength
// set by hand: -1 is what the server reports for a chunked request.
func TestBodyLimitInProcess(t *testing.T) {
	cases := []struct {
		name          string
		size          int
		contentLength int64
		want          int
		reachesNext   bool
	}{
		{"declared over is refused before the next handler", MaxBodyBytes + 1, MaxBodyBytes + 1, http.StatusRequestEntityTooLarge, false},
		{"declared at the limit", MaxBodyBytes, MaxBodyBytes, http.StatusOK, true},
		{"unknown length over is cut by the peek", MaxBodyBytes + 1, -1, http.StatusRequestEntityTooLarge, true},
		{"unknown length at the limit", MaxBodyBytes, -1, http.StatusOK, true},
		// A lying Content-Length below the real size: the reader still cuts.
		{"understated length over", MaxBodyBytes + 1, 10, http.StatusRequestEntityTooLarge, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newReq(http.MethodPost, "/mcp", bytes.NewReader(rpcBody(t, tc.size)))
			r.ContentLength = tc.contentLength
			reached := false
			next := MCPPeek(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ok.ServeHTTP(w, r)
			}))
			w := httptest.NewRecorder()
			BodyLimit(MaxBodyBytes)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				next.ServeHTTP(w, r)
			})).ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status = %d, want %d", w.Code, tc.want)
			}
			if reached != tc.reachesNext {
				t.Errorf("reached next = %v, want %v", reached, tc.reachesNext)
			}
		})
	}
}
