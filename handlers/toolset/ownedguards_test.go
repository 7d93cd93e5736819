package toolset

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// TestPlainID: the ids the owned path writes back itself, and what it
// writes; every other id is the SDK's to answer.
func TestPlainID(t *testing.T) {
	for raw, want := range map[string]string{
		"0": "0", "7": "7", "-7": "-7", "123456789012345": "123456789012345", "-123456789012345": "-123456789012345",
		`"a"`: `"a"`, `""`: `""`, `"<&>"`: `"<&>"`, "\"a\u2028b\"": `"a\u2028b"`, `"日本"`: `"日本"`,
		"1234567890123456": "", "-0": "", "01": "", "1.0": "", "1e2": "", "-": "", "": "", "null": "", "true": "",
		`"\u0041"`: "", `"a\"b"`: "", "\"\x01\"": "", "\"\xff\"": "", `"a`: "", "{}": "", "[1]": "",
	} {
		got, ok := plainID([]byte(raw))
		if ok != (want != "") || string(got) != want {
			t.Errorf("plainID(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

// TestMembers: one object, each member once, nothing after it.
func TestMembers(t *testing.T) {
	for body, want := range map[string]int{
		`{}`: 0, ` {"a":1} `: 1, `{"a":1,"b":{"a":2,"a":3}}`: 2, `{"\u0061":1}`: 1,
		`{"a":1,"a":2}`: -1, `{"a":1,"\u0061":2}`: -1, `{"a":1}{}`: -1, `{"a":1} x`: -1, `[]`: -1, `{"a":}`: -1, ``: -1, `"a"`: -1,
	} {
		m, ok := members([]byte(body))
		if got := len(m); !ok {
			got = -1
		} else if got != want {
			t.Errorf("members(%s) has %d members, want %d", body, got, want)
		}
		if ok != (want >= 0) {
			t.Errorf("members(%s) ok = %v", body, ok)
		}
	}
	// Each value is its exact text, as the SDK's RawMessage holds it.
	m, ok := members([]byte(` { "a" : [1, {"x":"]"}] , "b\u0022":"x\"y" ,"c":-1.5e3}`))
	if !ok || string(m["a"]) != `[1, {"x":"]"}]` || string(m[`b"`]) != `"x\"y"` || string(m["c"]) != `-1.5e3` {
		t.Errorf("members read %q", m)
	}
}

// TestNestingDepth counts as the SDK's checkMaxDepth: brackets inside
// strings, escaped quotes included, do not count.
func TestNestingDepth(t *testing.T) {
	for body, want := range map[string]int{
		`{}`: 1, `[[[]]]`: 3, `{"a":"[[[[\"[["}`: 1, `{"a":[{"b":[]}]}`: 4, `]]]{`: 1, `"\\"[`: 1, ``: 0,
	} {
		if got := nestingDepth([]byte(body)); got != want {
			t.Errorf("nestingDepth(%s) = %d, want %d", body, got, want)
		}
	}
}

// TestAcceptsBoth mirrors streamableAccepts' cases.
func TestAcceptsBoth(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{[]string{"application/json, text/event-stream"}, true},
		{[]string{"application/json", "text/event-stream"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/*;q=0.5, TEXT/*"}, true},
		{[]string{" application/json ; charset=utf-8 , text/event-stream;x=y"}, true},
		{[]string{"application/json"}, false},
		{[]string{"text/event-stream"}, false},
		{[]string{"application/jsonx, text/event-stream"}, false},
		{nil, false},
	} {
		if got := acceptsBoth(c.values); got != c.want {
			t.Errorf("acceptsBoth(%q) = %v", c.values, got)
		}
	}
}

// TestLoopback mirrors the SDK's util.IsLoopback.
func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "127.9.9.9": true, "[::1]:8080": true, "::1": true, "localhost": true, "localhost:1": true,
		"[::1]": true, "example.com": false, "10.0.0.1:80": false, "LOCALHOST": false, "": false, "localhost.": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v", addr, got)
		}
	}
}

// TestOwnedBodyPutBack: whatever ownable decides, the SDK reads the whole
// body, an over-long one included.
func TestOwnedBodyPutBack(t *testing.T) {
	o := &ownedPath{opts: streamableOptions(nil)}
	for _, body := range []string{
		rpcCall("1", "echo", `{"text":"x"}`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		strings.Repeat("x", MaxRequestBodyBytes+10),
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		for k, v := range diffHeaders {
			r.Header.Set(k, v)
		}
		o.ownable(r)
		got, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(got, []byte(body)) {
			t.Errorf("the SDK would read %d bytes of %d (%v)", len(got), len(body), err)
		}
	}
}

// TestOwnedPathSwitches: the owned path answers an ownable call unless
// HTTPOptions.SDKOnly (mcp.owned_tool_calls false) or MCPGODEBUG, whose
// switches change the SDK's defaults it mirrors, is set.
func TestOwnedPathSwitches(t *testing.T) {
	c := New("switch", "v0", "", diffTools()...)
	for _, tc := range []struct {
		name  string
		opts  HTTPOptions
		debug string
		owned bool
	}{
		{"default", HTTPOptions{}, "", true},
		{"SDK only", HTTPOptions{SDKOnly: true}, "", false},
		{"MCPGODEBUG set", HTTPOptions{}, "allowsessionsinstateless=1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("MCPGODEBUG", tc.debug)
			h := c.HTTPHandler(nil, tc.opts)
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(rpcCall("1", "echo", `{"text":"x"}`)))
			for k, v := range diffHeaders {
				r.Header.Set(k, v)
			}
			rec := &middleware.Record{}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r.WithContext(middleware.WithRecord(r.Context(), rec)))
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `\"echo\":\"x\"`) {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			if rec.Owned() != tc.owned {
				t.Errorf("owned = %v, want %v", rec.Owned(), tc.owned)
			}
		})
	}
}
