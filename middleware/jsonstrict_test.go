package middleware

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFoldName(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{"params", "PARAMS", true},
		{"params", "paramſ", true},  // long s folds to s in encoding/json
		{"kind", "\u212aind", true}, // Kelvin sign folds to k
		{"id", "\u0130d", true},     // dotted capital I lowers to i
		{"name", "nàme", false},
		{"a", "b", false},
		{"ß", "ss", false},         // simple folding only, as encoding/json
		{"\u03a3", "\u03c2", true}, // Σ and final ς share an orbit
	}
	for _, tc := range cases {
		t.Run(tc.a+"/"+tc.b, func(t *testing.T) {
			if got := foldName(tc.a) == foldName(tc.b); got != tc.same {
				t.Fatalf("foldName(%q) == foldName(%q) is %v, want %v", tc.a, tc.b, got, tc.same)
			}
		})
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

func TestCheckStrictAgreesWithReference(t *testing.T) {
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
		if got, want := checkStrict([]byte(doc)), referenceStrict([]byte(doc)); (got == "") != (want == "") {
			t.Errorf("%.80s: single pass %q, the Token walk %q", doc, got, want)
		}
	}
}

// BenchmarkCheckStrict checks a tools/call body as every MCP request is.
func BenchmarkCheckStrict(b *testing.B) {
	doc := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"demo","repo":"gateway"},"_meta":{"progressToken":7}}}`)
	b.Run("single-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := checkStrict(doc); r != "" {
				b.Fatal(r)
			}
		}
	})
	// The recursive Decoder.Token walk of the tests, for scale: the way
	// checkStrict worked before strictjson.
	b.Run("token-walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := referenceStrict(doc); r != "" {
				b.Fatal(r)
			}
		}
	})
}
