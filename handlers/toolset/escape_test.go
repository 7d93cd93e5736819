package toolset

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// marshalText is the reference: encoding/json's encoding of s with HTML
// escaping, what TextContent.MarshalJSON writes.
func marshalText(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestTextString pins appendTextString to encoding/json on the texts the
// differential tests send, and on every escape at every position of the
// eight-byte word the fast path skips.
func TestTextString(t *testing.T) {
	cases := map[string]string{}
	for name, text := range diffFixtures {
		cases[name] = text
	}
	for _, special := range []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", "\x80", "\xff", "é", "\u2028", "\u2029", "😀", "\xe2\x80", " "} {
		for pos := range 17 {
			cases[special+"@"+string(rune('a'+pos))] = strings.Repeat("x", pos) + special + strings.Repeat("y", 16-pos)
		}
	}
	cases["demo document"] = string(githubemu.MultiByteDocument(64 << 10))
	for name, text := range cases {
		if got, want := appendTextString([]byte("prefix"), text), append([]byte("prefix"), marshalText(t, text)...); !bytes.Equal(got, want) {
			t.Errorf("%s: %.200q, want %.200q", name, got, want)
		}
	}
}

// FuzzTextString: appendTextString writes what encoding/json writes, for
// any bytes.
func FuzzTextString(f *testing.F) {
	for _, text := range diffFixtures {
		if len(text) < 1<<10 { // the large ones only slow the mutator
			f.Add(text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := appendTextString(nil, text), marshalText(t, text); !bytes.Equal(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	})
}

// BenchmarkTextString is the escaping of a 64 KiB fragment's tool JSON
// into the text block, against json.Encoder's.
func BenchmarkTextString(b *testing.B) {
	for name, doc := range map[string]string{"multibyte": string(githubemu.MultiByteDocument(64 << 10)),
		"ascii": strings.Repeat("A line of <b>ASCII</b> text & \"quotes\", as most READMEs are.\n", 1000)} {
		text, err := EncodeJSON(map[string]any{"text": doc, "size": len(doc)})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) { benchTextString(b, string(text)) })
	}
}

func benchTextString(b *testing.B, s string) {
	b.Run("appendTextString", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		buf := make([]byte, 0, 2*len(s))
		for b.Loop() {
			buf = appendTextString(buf[:0], s)
		}
	})
	b.Run("json.Encoder", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			_ = json.NewEncoder(&buf).Encode(s)
		}
	})
}
