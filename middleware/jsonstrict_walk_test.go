package middleware

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// tokenWalkStrict is checkStrict as it was before strictjson: a walk over
// encoding/json's Decoder.Token. It stays as the reference the single pass
// must agree with, reason for reason, here and under FuzzMCPPeek.
func tokenWalkStrict(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		folded map[string]bool
		expect bool // next string token in an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.expect {
			if top.keys[s] {
				return "member " + quote(s) + " appears more than once"
			}
			if f := foldName(s); top.folded[f] {
				return "members differing only by case are not allowed"
			} else {
				top.folded[f] = true
			}
			top.keys[s] = true
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxJSONDepth {
				return "JSON nesting too deep"
			}
			if top != nil && top.object {
				top.expect = true
			}
			obj := tok == json.Delim('{')
			stack = append(stack, &frame{object: obj, keys: map[string]bool{}, folded: map[string]bool{}, expect: obj})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
			}
			continue
		}
		if top != nil && top.object {
			top.expect = true
		}
	}
}

// asciiFold must agree with foldName on every ASCII byte, or a plain name
// and an escaped or non-ASCII one could miss each other.
func TestASCIIFoldAgrees(t *testing.T) {
	for b := 0; b < 0x80; b++ {
		if got, want := string(rune(asciiFold(byte(b)))), foldName(string(rune(b))); got != want {
			t.Errorf("asciiFold(%q) = %q, foldName says %q", rune(b), got, want)
		}
	}
}

func TestCheckStrictAgreesWithTokenWalk(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, doc := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"method":"a","method":"b"}`,
		`{"method":"a","METHOD":"b"}`,
		`{"params":1,"paramſ":2}`,
		`{"kind":1,"\u212aind":2}`,
		`{"id":1,"\u0069d":2}`,
		`{"\u0130d":1,"id":2}`,
		`{"Σ":1,"ς":2}`,
		`{"a":{"b":1,"B":2}}`,
		`{"a":[{"x":1},{"x":2}],"b":{"x":1}}`,
		`{"a":"{\"a\":1,\"a\":2}","b":1}`,
		`{"n":1e999,"m":-0}`,
		`{"` + strings.Repeat("long", 20) + `":1,"` + strings.Repeat("long", 20) + `":2}`,
		deep(MaxJSONDepth),
		deep(MaxJSONDepth + 1),
		`{"a":` + deep(MaxJSONDepth-1) + `}`,
		`{"a":` + deep(MaxJSONDepth) + `}`,
	} {
		if !json.Valid([]byte(doc)) {
			t.Fatalf("not valid JSON: %s", doc)
		}
		if got, want := checkStrict([]byte(doc)), tokenWalkStrict([]byte(doc)); got != want {
			t.Errorf("%.80s: single pass %q, Token walk %q", doc, got, want)
		}
	}
}

// BenchmarkCheckStrict checks a tools/call body as every MCP request is.
func BenchmarkCheckStrict(b *testing.B) {
	doc := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"demo","repo":"gateway"},"_meta":{"progressToken":7}}}`)
	for _, f := range []struct {
		name  string
		check func([]byte) string
	}{{"single-pass", checkStrict}, {"token-walk", tokenWalkStrict}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := f.check(doc); r != "" {
					b.Fatal(r)
				}
			}
		})
	}
}
