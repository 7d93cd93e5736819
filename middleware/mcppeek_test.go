package middleware

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPPeekTestdata runs every body in testdata/peek: refuse-* must be
// answered 400 before the next handler, pass-* must reach it unchanged.
// Non-JSON bodies are refused too: see peekCall.
func TestMCPPeekTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/peek/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			refuse := strings.HasPrefix(name, "refuse-")
			if !refuse && !strings.HasPrefix(name, "pass-") {
				t.Fatalf("testdata file %s must start with refuse- or pass-", f)
			}
			status, reached, got := peek(t, body)
			if refuse {
				if status != http.StatusBadRequest || reached {
					t.Fatalf("status %d, reached next %v; want 400 before the next handler", status, reached)
				}
				return
			}
			if status != http.StatusOK || !reached || !bytes.Equal(got, body) {
				t.Fatalf("status %d, reached %v, body restored %v", status, reached, bytes.Equal(got, body))
			}
		})
	}
}

// peek sends body through MCPPeek and reports the status, whether the next
// handler ran, and the body it read.
func peek(t *testing.T, body []byte) (status int, reached bool, seen []byte) {
	t.Helper()
	r, _ := newReq(http.MethodPost, "/mcp", bytes.NewReader(body))
	w := httptest.NewRecorder()
	MCPPeek(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		seen, _ = io.ReadAll(r.Body)
		if r.ContentLength != int64(len(seen)) {
			t.Errorf("ContentLength %d, body %d bytes", r.ContentLength, len(seen))
		}
	})).ServeHTTP(w, r)
	return w.Code, reached, seen
}

func nested(depth int) string {
	// depth counts every object and array, the envelope included.
	inner := strings.Repeat("[", depth-3) + strings.Repeat("]", depth-3)
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":` + inner + `}}}`
}

func TestPeekCall(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		want   Call
		refuse string // substring of the refusal reason; "" to pass
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_repository"}}`,
			Call{Method: "tools/call", Tool: "get_repository", ID: json.RawMessage(`3`)}, ""},
		{"id string captured raw", `{"jsonrpc":"2.0","id":"a\u0062\"c","method":"ping"}`,
			Call{Method: "ping", ID: json.RawMessage(`"a\u0062\"c"`)}, ""},
		{"id float captured raw", `{"jsonrpc":"2.0","id":1.50e2,"method":"ping"}`,
			Call{Method: "ping", ID: json.RawMessage(`1.50e2`)}, ""},
		{"id big integer captured raw", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`,
			Call{Method: "ping", ID: json.RawMessage(`123456789012345678901234567890`)}, ""},
		{"id null is no id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, Call{Method: "ping"}, ""},
		{"notification has no id", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, Call{Method: "notifications/initialized"}, ""},
		{"surrounding whitespace", " \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n ", Call{Method: "ping", ID: json.RawMessage(`1`)}, ""},
		{"non-string method is left to the SDK", `{"jsonrpc":"2.0","id":1,"method":5}`, Call{ID: json.RawMessage(`1`)}, ""},
		// Member names are matched exactly, as the SDK matches them: a
		// case variant alone is not the member.
		{"case variant alone is not the method", `{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, Call{ID: json.RawMessage(`1`)}, ""},
		{"long s alone is not params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"x"}}`, Call{}, "tool name"},
		{"name of 128 bytes", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("n", 128) + `"}}`,
			Call{Method: "tools/call", Tool: strings.Repeat("n", 128), ID: json.RawMessage(`1`)}, ""},
		{"name of 129 bytes", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("n", 129) + `"}}`, Call{}, "tool name"},
		{"name null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}`, Call{}, "tool name"},
		{"name number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, Call{}, "tool name"},
		{"params array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["x"]}`, Call{}, "tool name"},
		{"params null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, Call{}, "tool name"},
		{"nesting 32 passes", nested(32), Call{Method: "tools/call", Tool: "t", ID: json.RawMessage(`1`)}, ""},
		{"nesting 33 refused", nested(33), Call{}, "too deep"},
		{"nesting 10000 refused", nested(10000), Call{}, "too deep"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, Call{}, "batch"},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, Call{}, "more than once"},
		{"duplicate in array element", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,{"x":1,"x":1}]}}`, Call{}, "more than once"},
		{"same member in sibling objects is fine", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":{"x":1},"b":{"x":1}}}`,
			Call{Method: "ping", ID: json.RawMessage(`1`)}, ""},
		{"case variant members", `{"jsonrpc":"2.0","id":1,"method":"ping","ID":2}`, Call{}, "case"},
		{"long s variant of params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"paramſ":{"name":"b"}}`, Call{}, "case"},
		{"kelvin sign variant", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"k":1,"\u212a":2}}`, Call{}, "case"},
		// Whatever the gate cannot read is refused, never left to the SDK,
		// whose decoder would run the first value of `{…} x`.
		{"not JSON", `{"jsonrpc":`, Call{}, "not one JSON-RPC message"},
		{"empty body", ``, Call{}, "not one JSON-RPC message"},
		{"whitespace body", " \n ", Call{}, "not one JSON-RPC message"},
		{"scalar", `42`, Call{}, "not one JSON-RPC message"},
		{"null", `null`, Call{}, "not one JSON-RPC message"},
		{"string", `"tools/call"`, Call{}, "not one JSON-RPC message"},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}} x`, Call{}, "not one JSON-RPC message"},
		{"trailing second message", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`, Call{}, "not one JSON-RPC message"},
		{"trailing NUL", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\x00", Call{}, "not one JSON-RPC message"},
		{"byte order mark", "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", Call{}, "not one JSON-RPC message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := peekCall([]byte(tc.body))
			if tc.refuse != "" {
				if !strings.Contains(reason, tc.refuse) {
					t.Fatalf("reason = %q, want it to mention %q", reason, tc.refuse)
				}
				return
			}
			if reason != "" {
				t.Fatalf("refused: %s", reason)
			}
			if got.Method != tc.want.Method || got.Tool != tc.want.Tool || !bytes.Equal(got.ID, tc.want.ID) {
				t.Fatalf("call = {%q %q %s}, want {%q %q %s}", got.Method, got.Tool, got.ID, tc.want.Method, tc.want.Tool, tc.want.ID)
			}
		})
	}
}

func TestMCPPeekHandler(t *testing.T) {
	t.Run("GET passes without reading", func(t *testing.T) {
		r, rec := newReq(http.MethodGet, "/mcp", strings.NewReader("[not read]"))
		w := httptest.NewRecorder()
		MCPPeek(ok).ServeHTTP(w, r)
		if w.Code != http.StatusOK || rec.Call().Method != "" {
			t.Fatalf("status %d, call %+v", w.Code, rec.Call())
		}
	})
	t.Run("call recorded and body restored", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"get_repository"}}`
		r, rec := newReq(http.MethodPost, "/mcp", strings.NewReader(body))
		var seen string
		MCPPeek(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			seen = string(b)
		})).ServeHTTP(httptest.NewRecorder(), r)
		c := rec.Call()
		if seen != body || c.Tool != "get_repository" || string(c.ID) != `"x-1"` {
			t.Fatalf("seen %q, call %+v", seen, c)
		}
	})
	t.Run("refusal carries the id when one was peeked", func(t *testing.T) {
		// A refusal by the peek itself has no call yet, so the plain body.
		r, rec := newReq(http.MethodPost, "/mcp", strings.NewReader(`{"id":1,"id":2}`))
		w := httptest.NewRecorder()
		MCPPeek(mustNotRun(t)).ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Fatalf("status %d", w.Code)
		}
		if e := errorBody(t, w.Body.String()); e["code"] != "invalid_arguments" {
			t.Fatalf("error %v", e)
		}
		if rec.Outcome() != "invalid_arguments" {
			t.Fatalf("outcome %q", rec.Outcome())
		}
	})
	t.Run("read error is 400", func(t *testing.T) {
		r, _ := newReq(http.MethodPost, "/mcp", io.MultiReader(strings.NewReader("{"), errReader{}))
		w := httptest.NewRecorder()
		MCPPeek(mustNotRun(t)).ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Fatalf("status %d", w.Code)
		}
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
