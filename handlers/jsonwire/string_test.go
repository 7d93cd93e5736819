package jsonwire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// marshal is the reference: encoding/json's encoding of s with HTML
// escaping, what TextContent.MarshalJSON and json.Marshal write.
func marshal(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// specials are the bytes and runes AppendString escapes or must not.
var specials = []string{"\"", "\\", "<", ">", "&", "\x00", "\b", "\f", "\n", "\r", "\t", "\x1f", "\x7f", "\x80", "\xff", "é", "\u2028", "\u2029", "😀", "\xe2\x80", " "}

// TestAppendString pins AppendString to encoding/json on every escape at
// every position of a short text, and on the demo's multi-byte document.
func TestAppendString(t *testing.T) {
	cases := map[string]string{"empty": ""}
	for _, special := range specials {
		for pos := range 17 {
			cases[special+"@"+string(rune('a'+pos))] = strings.Repeat("x", pos) + special + strings.Repeat("y", 16-pos)
		}
	}
	cases["demo document"] = string(githubemu.MultiByteDocument(64 << 10))
	for name, text := range cases {
		if got, want := AppendString([]byte("prefix"), text), append([]byte("prefix"), marshal(t, text)...); !bytes.Equal(got, want) {
			t.Errorf("%s: %.200q, want %.200q", name, got, want)
		}
	}
}

// FuzzAppendString: AppendString writes what encoding/json writes, for
// any bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range specials {
		f.Add("a" + s + "b")
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := AppendString(nil, text), marshal(t, text); !bytes.Equal(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	})
}

// BenchmarkAppendString is the escaping of a 64 KiB fragment's text,
// against json.Encoder's.
func BenchmarkAppendString(b *testing.B) {
	for name, doc := range map[string]string{"multibyte": string(githubemu.MultiByteDocument(64 << 10)),
		"ascii": strings.Repeat("A line of <b>ASCII</b> text & \"quotes\", as most READMEs are.\n", 1000)} {
		b.Run(name+"/AppendString", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			buf := make([]byte, 0, 2*len(doc))
			for b.Loop() {
				buf = AppendString(buf[:0], doc)
			}
		})
		b.Run(name+"/json.Encoder", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				_ = json.NewEncoder(&buf).Encode(doc)
			}
		})
	}
}
