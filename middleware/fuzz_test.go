package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/fuzzseed"
)

// peekSeeds are the committed corpus of FuzzMCPPeek: every body of
// testdata/peek (the strictness cases) and the hostile-caller shapes.
func peekSeeds(t testing.TB) []fuzzseed.Seed {
	files, err := filepath.Glob("testdata/peek/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	var seeds []fuzzseed.Seed
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, fuzzseed.Seed{Name: "peek-" + strings.TrimSuffix(filepath.Base(f), ".json"), Values: []any{b}})
	}
	call := func(args string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":` + args + `}}`)
	}
	for name, b := range map[string][]byte{
		"hostile-nested-33":         call(strings.Repeat(`{"a":`, 31) + "1" + strings.Repeat("}", 31)),
		"hostile-nested-32":         call(strings.Repeat(`{"a":`, 30) + "1" + strings.Repeat("}", 30)),
		"hostile-batch":             append(append([]byte("["), call(`{}`)...), ']'),
		"hostile-kelvin-name":       []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","nam\u212a":"x"}}`),
		"hostile-escaped-method":    []byte(`{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","method":"tools/list"}`),
		"hostile-id-object":         []byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`),
		"hostile-huge-id":           []byte(`{"jsonrpc":"2.0","id":1` + strings.Repeat("0", 500) + `,"method":"tools/list"}`),
		"hostile-long-tool-name":    []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("t", 129) + `"}}`),
		"hostile-crlf-in-tool-name": []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository\r\nX: 1"}}`),
	} {
		seeds = append(seeds, fuzzseed.Seed{Name: name, Values: []any{b}})
	}
	return seeds
}

func TestPeekFuzzSeeds(t *testing.T) { fuzzseed.Sync(t, "FuzzMCPPeek", peekSeeds(t)) }

// FuzzMCPPeek: the JSON-RPC peek of every MCP request never panics, and
// what it lets through is one JSON object of at most MaxJSONDepth levels
// with no member repeated, even under case folding, at any depth; its
// method, tool name and id are what an exact reader (the SDK matches
// member names exactly) sees.
func FuzzMCPPeek(f *testing.F) {
	for _, s := range peekSeeds(f) {
		f.Add(s.Values[0].([]byte))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if doc := bytes.TrimSpace(body); json.Valid(doc) {
			if got, want := checkStrict(doc), referenceStrict(doc); (got == "") != (want == "") {
				t.Fatalf("checkStrict says %q, the reference %q: %q", got, want, body)
			}
		}
		call, reason := peekCall(body)
		if reason != "" {
			return
		}
		trimmed := bytes.TrimSpace(body)
		if !json.Valid(trimmed) || trimmed[0] != '{' {
			t.Fatalf("passed what is not one JSON object: %q", body)
		}
		if r := referenceStrict(trimmed); r != "" {
			t.Fatalf("passed a body that %s: %q", r, body)
		}
		var env map[string]json.RawMessage
		_ = json.Unmarshal(trimmed, &env)
		var method string
		_ = json.Unmarshal(env["method"], &method)
		if call.Method != method {
			t.Fatalf("peeked method %q, an exact reader sees %q", call.Method, method)
		}
		if method == "tools/call" {
			var params map[string]json.RawMessage
			_ = json.Unmarshal(env["params"], &params)
			var name string
			if err := json.Unmarshal(params["name"], &name); err != nil || name != call.Tool {
				t.Fatalf("peeked tool %q, an exact reader sees %q (%v)", call.Tool, name, err)
			}
		}
	})
}

// referenceStrict re-checks checkStrict's promises by recursion over
// encoding/json tokens.
func referenceStrict(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var walk func(depth int) string
	walk = func(depth int) string {
		tok, err := dec.Token()
		if err != nil {
			return "cannot be read"
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return ""
		}
		if depth+1 > MaxJSONDepth {
			return "nests deeper than MaxJSONDepth"
		}
		folded := map[string]bool{}
		for dec.More() {
			if d == '{' {
				k, _ := dec.Token()
				f := foldName(k.(string))
				if folded[f] {
					return "repeats a member"
				}
				folded[f] = true
			}
			if r := walk(depth + 1); r != "" {
				return r
			}
		}
		_, _ = dec.Token()
		return ""
	}
	if r := walk(0); r != "" {
		return r
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "has trailing data"
	}
	return ""
}
