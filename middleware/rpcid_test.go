package middleware

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckID: strings and plain integers within ±(2^53 − 1) pass, at
// the limit included; one over, fractions, exponents, -0 and non-scalar
// ids are refused.
func TestCheckID(t *testing.T) {
	cases := []struct {
		id   string
		pass bool
	}{
		{``, true}, {`"abc"`, true}, {`""`, true}, {`0`, true}, {`-1`, true}, {`42`, true},
		{`9007199254740991`, true}, {`-9007199254740991`, true},
		{`9007199254740992`, false}, {`-9007199254740992`, false}, {`9007199254740993`, false},
		{`99999999999999999999999`, false}, {`1.5`, false}, {`1.0`, false}, {`1e3`, false}, {`1E3`, false},
		{`-0`, false}, {`true`, false}, {`{}`, false}, {`[1]`, false},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			if got := checkID(json.RawMessage(c.id)); (got == "") != c.pass {
				t.Fatalf("checkID(%s) = %q, want pass=%v", c.id, got, c.pass)
			}
		})
	}
}

// TestMCPPeekRefusesAlteredIDs: a refused id gets HTTP 400 and a JSON-RPC
// error -32600 with id null, and the SDK (next) never sees the message.
func TestMCPPeekRefusesAlteredIDs(t *testing.T) {
	for _, id := range []string{`1.5`, `9007199254740993`, `1e3`, `-0`} {
		t.Run(id, func(t *testing.T) {
			r, _ := newReq(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`))
			w := httptest.NewRecorder()
			MCPPeek(mustNotRun(t)).ServeHTTP(w, r)
			gotID, e := rpcError(t, w.Body.String())
			if w.Code != http.StatusBadRequest || string(gotID) != "null" || e["code"] != float64(-32600) {
				t.Fatalf("%d %s", w.Code, w.Body.String())
			}
		})
	}
	r, _ := newReq(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/list"}`))
	w := httptest.NewRecorder()
	MCPPeek(ok).ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("the largest safe id: %d", w.Code)
	}
}
