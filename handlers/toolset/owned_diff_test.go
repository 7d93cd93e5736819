package toolset

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/test/mcpdiff"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// diffFixtures are texts a tool hands over as its result's text as they
// are (json.RawMessage): what the escaping into the text block must treat
// exactly as the SDK does.
var diffFixtures = map[string]string{
	"html":        `{"a":"<script>alert('&')</script>","b":"<b>&amp;</b>"}`,
	"separators":  "line\u2028para\u2029end",
	"invalid":     "bad \xff\xfe utf-8 \xc3 <&>",
	"controls":    "nul \x00 bel \x07 esc \x1b del \x7f tab\t nl\n cr\r bs\b ff\f",
	"quotes":      `"quoted" \backslash\ /slash/`,
	"multibyte":   "äöü ß — 日本語 — 😀𝄞",
	"empty":       "",
	"fragment":    string(githubemu.MultiByteDocument(200 << 10)[:65534]),
	"large":       strings.Repeat("<&> ü 😀 \"x\"\n", 1<<20/20),
	"json-in-str": `{"text":"{\"nested\":\"<\\u003c>\"}"}`,
}

type fixtureArgs struct {
	Case string `json:"case" arg:"required" desc:"Fixture name."`
}

type appendedArgs struct {
	Case  string `json:"case" arg:"required" desc:"Fixture name."`
	Fused bool   `json:"fused" arg:"required" desc:"Write the text block too."`
}

type failArgs struct {
	Code string `json:"code" arg:"required" desc:"Error code."`
}

// diffTools are the tools the toolset-level differential test calls:
// results of every shape the text escaping meets, written through the
// result's text or straight from the result, every error code, and one
// tool outside the anonymous toolset.
func diffTools() []Tool {
	anon := middleware.ToolPolicy{Anonymous: true}
	return []Tool{
		Typed(Tool{Name: "echo", Description: "Echo text.", Policy: anon},
			func(_ context.Context, in echoArgs) (any, error) {
				return map[string]any{"echo": in.Text, "html": "<b>&amp;</b>"}, nil
			}),
		Typed(Tool{Name: "fixture", Description: "A fixed text.", Policy: anon},
			func(_ context.Context, in fixtureArgs) (any, error) {
				text, ok := diffFixtures[in.Case]
				if !ok {
					return nil, toolerr.New(toolerr.NotFound, "no fixture %q <&>", in.Case)
				}
				return json.RawMessage(text), nil
			}),
		// The fixtures again as results that write their own JSON (a
		// document fragment's shape): "fused" ones write their text
		// block too, which the owned path writes in one pass.
		Typed(Tool{Name: "appended", Description: "A fixed text, self-encoded.", Policy: anon},
			func(_ context.Context, in appendedArgs) (any, error) {
				text, ok := diffFixtures[in.Case]
				switch {
				case !ok:
					return nil, toolerr.New(toolerr.NotFound, "no fixture %q", in.Case)
				case in.Fused:
					return quotedText(text), nil
				}
				return unfusedText(text), nil
			}),
		Typed(Tool{Name: "fail", Description: "Fail with a code.", Policy: anon},
			func(_ context.Context, in failArgs) (any, error) {
				return nil, toolerr.New(toolerr.Code(in.Code), "failed with <%s> — ü \u2028", in.Code).With("detail", "\"&\"")
			}),
		Typed(Tool{Name: "private", Description: "Needs a principal."},
			func(_ context.Context, in echoArgs) (any, error) { return []string{in.Text}, nil }),
	}
}

// diffCase is one request of the corpus, and whether the owned path must
// answer it itself (false: it must hand it to the SDK).
type diffCase struct {
	name    string
	owned   bool
	body    string
	method  string            // default POST
	headers map[string]string // over diffHeaders; "" deletes
	host    string
	accepts []string // several Accept lines
	caller  bool     // a principal (X-Test-Caller)
}

var diffHeaders = map[string]string{
	"Content-Type":         "application/json",
	"Accept":               "application/json, text/event-stream",
	"Mcp-Protocol-Version": "2025-11-25",
}

func rpcCall(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func diffCorpus() []diffCase {
	echo := rpcCall("1", "echo", `{"text":"hi"}`)
	cases := []diffCase{
		{name: "echo", owned: true, body: echo},
		{name: "echo html", owned: true, body: rpcCall("2", "echo", `{"text":"<script>&amp;</script> > <"}`)},
		{name: "echo non-ASCII", owned: true, body: rpcCall("3", "echo", `{"text":"äöü 日本語 😀 \u00e9"}`)},
		{name: "echo escapes", owned: true, body: rpcCall("4", "echo", `{"text":"a\"b\\c\nd\te\u2028f\u0000g\ud800h"}`)},
		{name: "invalid arguments", owned: true, body: rpcCall("5", "echo", `{"text":5}`)},
		{name: "unknown argument", owned: true, body: rpcCall("6", "echo", `{"text":"x","more":1}`)},
		{name: "empty arguments", owned: true, body: rpcCall("7", "echo", `{}`)},
		{name: "no arguments", owned: true, body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"}}`},
		{name: "unknown fixture", owned: true, body: rpcCall("9", "fixture", `{"case":"<nope>"}`)},
		{name: "private with a caller", owned: true, caller: true, body: rpcCall("10", "private", `{"text":"ü"}`)},
		{name: "private without one", body: rpcCall("11", "private", `{"text":"x"}`)},
		{name: "unknown tool", body: rpcCall("12", "nope", `{}`)},
		{name: "members in another order", owned: true, body: `{"params":{"arguments":{"text":"x"},"name":"echo"},"method":"tools/call","id":13,"jsonrpc":"2.0"}`},
		{name: "whitespace", owned: true, body: " \n\t{ \"jsonrpc\" : \"2.0\" , \"id\" : 14 , \"method\" : \"tools/call\" , \"params\" : { \"name\" : \"echo\" , \"arguments\" : { \"text\" : \"x\" } } }\n "},
		{name: "escaped member name", owned: true, body: `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"n\u0061me":"echo","arguments":{"text":"x"}}}`},
		{name: "_meta progress token", owned: true, body: `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":"p1"}}}`},
		{name: "deep arguments", owned: true, body: rpcCall("17", "echo", `{"text":"x","deep":`+strings.Repeat("[", 990)+strings.Repeat("]", 990)+`}`)},

		// ids
		{name: "id 0", owned: true, body: rpcCall("0", "echo", `{"text":"x"}`)},
		{name: "id negative", owned: true, body: rpcCall("-7", "echo", `{"text":"x"}`)},
		{name: "id 15 digits", owned: true, body: rpcCall("123456789012345", "echo", `{"text":"x"}`)},
		{name: "id string", owned: true, body: rpcCall(`"abc-1"`, "echo", `{"text":"x"}`)},
		{name: "id empty string", owned: true, body: rpcCall(`""`, "echo", `{"text":"x"}`)},
		{name: "id string HTML and U+2028", owned: true, body: rpcCall("\"<&>\u2028ü\"", "echo", `{"text":"x"}`)},
		{name: "id 16 digits", body: rpcCall("1234567890123456", "echo", `{"text":"x"}`)},
		{name: "id fraction", body: rpcCall("1.5", "echo", `{"text":"x"}`)},
		{name: "id exponent", body: rpcCall("1e2", "echo", `{"text":"x"}`)},
		{name: "id minus zero", body: rpcCall("-0", "echo", `{"text":"x"}`)},
		{name: "id escaped string", body: rpcCall(`"\u0041"`, "echo", `{"text":"x"}`)},
		{name: "id null", body: rpcCall("null", "echo", `{"text":"x"}`)},
		{name: "id bool", body: rpcCall("true", "echo", `{"text":"x"}`)},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`},

		// other methods
		{name: "tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{name: "ping", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{name: "initialize", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`},
		{name: "initialized notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":1,"method":"tools/cal"}`},
		{name: "escaped method", body: `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"echo","arguments":{"text":"x"}}}`},

		// envelope
		{name: "batch", body: "[" + echo + "]"},
		{name: "empty body", body: ""},
		{name: "blank body", body: " \n"},
		{name: "not JSON", body: "hello"},
		{name: "trailing data", body: echo + " x"},
		{name: "trailing message", body: echo + "{}"},
		{name: "duplicate member", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"fixture","arguments":{"text":"x"}}}`},
		{name: "duplicate id", body: `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`},
		{name: "no jsonrpc", body: `{"id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`},
		{name: "extra member", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}},"result":{}}`},
		{name: "too deep", body: rpcCall("1", "echo", `{"text":"x","deep":`+strings.Repeat("[", 1001)+strings.Repeat("]", 1001)+`}`)},
		{name: "over the body limit", body: echo + strings.Repeat(" ", MaxRequestBodyBytes)},

		// params
		{name: "no params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`},
		{name: "null params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`},
		{name: "array params", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo"]}`},
		{name: "no name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"text":"x"}}}`},
		{name: "number name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`},
		{name: "escaped name", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0065cho","arguments":{"text":"x"}}}`},
		{name: "null arguments", body: rpcCall("1", "echo", "null")},
		{name: "array arguments", body: rpcCall("1", "echo", `["x"]`)},
		{name: "string arguments", body: rpcCall("1", "echo", `"x"`)},
		{name: "unknown params member", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"task":{}}}`},
		{name: "inputResponses", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"inputResponses":{}}}`},
		{name: "requestState", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"requestState":"s"}}`},
		{name: "_meta protocol version", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`},
		{name: "_meta not an object", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":"x"}}`},

		// HTTP
		{name: "GET", method: http.MethodGet, body: ""},
		{name: "DELETE", method: http.MethodDelete, body: ""},
		{name: "PUT", method: http.MethodPut, body: echo},
		{name: "non-loopback Host on loopback", host: "evil.example", body: echo},
		{name: "localhost Host", owned: true, host: "localhost:1234", body: echo},
		{name: "no protocol version", owned: true, headers: map[string]string{"Mcp-Protocol-Version": ""}, body: echo},
		{name: "2024-11-05", owned: true, headers: map[string]string{"Mcp-Protocol-Version": "2024-11-05"}, body: echo},
		{name: "2025-03-26", owned: true, headers: map[string]string{"Mcp-Protocol-Version": "2025-03-26"}, body: echo},
		{name: "2025-06-18", owned: true, headers: map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, body: echo},
		{name: "2026-07-28", headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, body: echo},
		{name: "unknown protocol version", headers: map[string]string{"Mcp-Protocol-Version": "2025-01-01"}, body: echo},
		{name: "future protocol version", headers: map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, body: echo},
		{name: "charset", owned: true, headers: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: echo},
		{name: "upper-case content type", owned: true, headers: map[string]string{"Content-Type": "Application/JSON"}, body: echo},
		{name: "text/plain", headers: map[string]string{"Content-Type": "text/plain"}, body: echo},
		{name: "no content type", headers: map[string]string{"Content-Type": ""}, body: echo},
		{name: "malformed content type", headers: map[string]string{"Content-Type": "application/json; =x"}, body: echo},
		{name: "accept json only", headers: map[string]string{"Accept": "application/json"}, body: echo},
		{name: "accept stream only", headers: map[string]string{"Accept": "text/event-stream"}, body: echo},
		{name: "no accept", headers: map[string]string{"Accept": ""}, body: echo},
		{name: "accept */*", owned: true, headers: map[string]string{"Accept": "*/*"}, body: echo},
		{name: "accept wildcards and q", owned: true, headers: map[string]string{"Accept": "application/*;q=0.9, TEXT/*"}, body: echo},
		{name: "accept on two lines", owned: true, accepts: []string{"application/json", "text/event-stream"}, body: echo},
		{name: "session id", headers: map[string]string{"Mcp-Session-Id": "s1"}, body: echo},
		{name: "last event id", headers: map[string]string{"Last-Event-ID": "e_1"}, body: echo},
		{name: "Mcp-Method", headers: map[string]string{"Mcp-Method": "tools/call"}, body: echo},
		{name: "Mcp-Name", headers: map[string]string{"Mcp-Name": "echo"}, body: echo},
	}
	for name := range diffFixtures {
		cases = append(cases, diffCase{name: "fixture " + name, owned: true, body: rpcCall("20", "fixture", `{"case":"`+name+`"}`)},
			diffCase{name: "fused " + name, owned: true, body: rpcCall("21", "appended", `{"case":"`+name+`","fused":true}`)},
			diffCase{name: "self-encoded " + name, owned: true, body: rpcCall("22", "appended", `{"case":"`+name+`","fused":false}`)})
	}
	for _, code := range toolerr.Codes() {
		cases = append(cases, diffCase{name: "error " + string(code), owned: true, body: rpcCall(`"e-`+string(code)+`"`, "fail", `{"code":"`+string(code)+`"}`)})
	}
	return cases
}

// diffServers serves the test toolset twice over real HTTP on loopback:
// with the owned path, and through the SDK only. A request with
// X-Test-Caller has a principal.
func diffServers(t *testing.T) (owned, sdk *httptest.Server) {
	t.Helper()
	c := New("diff", "v0", "differential", diffTools()...)
	serve := func(o HTTPOptions) *httptest.Server {
		h := c.HTTPHandler(slog.New(slog.DiscardHandler), o)
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Test-Caller") != "" {
				r = r.WithContext(middleware.WithPrincipal(r.Context(), middleware.NewPassthrough("forge-token")))
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(s.Close)
		return s
	}
	return serve(HTTPOptions{}), serve(HTTPOptions{SDKOnly: true})
}

func (dc diffCase) request(t *testing.T, url string) *http.Request {
	t.Helper()
	method := dc.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(dc.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range diffHeaders {
		req.Header.Set(k, v)
	}
	for k, v := range dc.headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if dc.accepts != nil {
		req.Header["Accept"] = dc.accepts
	}
	if dc.host != "" {
		req.Host = dc.host
	}
	if dc.caller {
		req.Header.Set("X-Test-Caller", "1")
	}
	return req
}

func do(t *testing.T, req *http.Request) mcpdiff.Answer {
	t.Helper()
	a, err := mcpdiff.Do(http.DefaultClient, req)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOwnedPathDifferential is the owned path's contract at the toolset:
// every request of the corpus goes to both paths, and the owned path
// must answer exactly what the SDK answers. Each case also says whether
// the owned path answers it itself, so the test cannot pass by handing
// everything to the SDK. When go-sdk is upgraded this test says whether
// the owned path still matches (docs/architecture.md).
func TestOwnedPathDifferential(t *testing.T) {
	owned, sdk := diffServers(t)
	c := New("diff", "v0", "differential", diffTools()...)
	guards := &ownedPath{opts: streamableOptions(nil), full: c.ownedTools(nil, nil),
		anonymous: c.ownedTools(func(t Tool) bool { return t.Policy.Anonymous }, nil)}
	for _, dc := range diffCorpus() {
		t.Run(dc.name, func(t *testing.T) {
			// ownable reads what a real listener gives it: a loopback
			// local address.
			probe := dc.request(t, owned.URL)
			ctx := context.WithValue(probe.Context(), http.LocalAddrContextKey, owned.Listener.Addr())
			if dc.caller {
				ctx = middleware.WithPrincipal(ctx, middleware.NewPassthrough("forge-token"))
			}
			probe = probe.WithContext(ctx)
			if _, got := guards.ownable(probe); got != dc.owned {
				t.Errorf("owned = %v, want %v", got, dc.owned)
			}
			if diff := mcpdiff.Differs(do(t, dc.request(t, owned.URL)), do(t, dc.request(t, sdk.URL))); diff != "" {
				t.Error(diff)
			}
		})
	}
}
