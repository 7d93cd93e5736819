package jsonwire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// marshal is the reference: encoding/json's encoding of s, with HTML
// escaping (what TextContent.MarshalJSON and json.Marshal write) or
// without (what toolset.EncodeJSON writes).
func marshal(t testing.TB, s string, escapeHTML bool) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// writers are the two appenders and whether each escapes HTML.
var writers = []struct {
	name       string
	write      func([]byte, string) []byte
	escapeHTML bool
}{
	{"AppendString", AppendString, true},
	{"AppendStringKeepHTML", AppendStringKeepHTML, false},
}

// specials are the bytes and runes the appenders escape or must not:
// every kind of ill-formed sequence (a lone continuation byte, bytes
// never in UTF-8, overlong forms, surrogates, past U+10FFFF, cut short)
// and the well-formed sequences at the edges of each lead byte's range.
var specials = []string{"\"", "\\", "<", ">", "&", "\x00", "\b", "\f", "\n", "\r", "\t", "\x1f", "\x7f", "\x80", "\xff",
	"é", "\u2028", "\u2029", "\u2027", "\u202a", "\ufffd", "😀", "\xe2\x80", "\xe2\x80\xa8"[:2] + "\xa7", " ",
	"\xc0\xaf", "\xc1\xbf", "\xc2\x80", "\xdf\xbf", "\xe0\x9f\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xed\xa0\x80",
	"\xef\xbf\xbf", "\xf0\x8f\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
	"\xf0\x90\x80", "\xe2\x28\xa1", "\xc3\x28"}

// TestAppendString pins both appenders to encoding/json on every escape at
// every position of a short text, and on the demo's multi-byte document.
func TestAppendString(t *testing.T) {
	cases := map[string]string{"empty": ""}
	for _, special := range specials {
		for pos := range 17 {
			cases[special+"@"+string(rune('a'+pos))] = strings.Repeat("x", pos) + special + strings.Repeat("y", 16-pos)
		}
		cases[special+" at the end"] = "x" + special
	}
	cases["demo document"] = string(githubemu.MultiByteDocument(64 << 10))
	for _, w := range writers {
		for name, text := range cases {
			if got, want := w.write([]byte("prefix"), text), append([]byte("prefix"), marshal(t, text, w.escapeHTML)...); !bytes.Equal(got, want) {
				t.Errorf("%s: %s: %.200q, want %.200q", w.name, name, got, want)
			}
		}
	}
}

// TestWellFormed pins the in-line UTF-8 check to utf8.DecodeRuneInString
// for every lead and second byte, with third and fourth bytes on both
// sides of the continuation range, and cut short at every length.
func TestWellFormed(t *testing.T) {
	tails := []byte{0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff}
	for lead := 0x80; lead <= 0xff; lead++ {
		for second := range 256 {
			for _, third := range tails {
				for _, fourth := range tails {
					full := string([]byte{byte(lead), byte(second), third, fourth})
					for n := 1; n <= len(full); n++ {
						s := full[:n]
						r, size := utf8.DecodeRuneInString(s)
						want := size
						if r == utf8.RuneError && size == 1 {
							want = 0
						}
						if got := wellFormed(s, 0); got != want {
							t.Fatalf("% x: %d, want %d", s, got, want)
						}
					}
				}
			}
		}
	}
}

// FuzzAppendString: both appenders write what encoding/json writes, for
// any bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range specials {
		f.Add("a" + s + "b")
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, w := range writers {
			if got, want := w.write(nil, text), marshal(t, text, w.escapeHTML); !bytes.Equal(got, want) {
				t.Fatalf("%s: %q, want %q", w.name, got, want)
			}
		}
	})
}

// BenchmarkAppendString is the escaping of a 64 KiB fragment's text,
// against json.Encoder's: text that is mostly multi-byte characters (the
// demo's document) and ASCII with HTML to escape.
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

// twoPass is what AppendStringInString must write between quotes: s's
// JSON string without HTML escaping, as a JSON string with it.
func twoPass(dst []byte, s string) []byte {
	return AppendString(dst, string(AppendStringKeepHTML(nil, s)))
}

// oneInTwo is AppendStringInString's string between the quotes of the
// string it stands in.
func oneInTwo(dst []byte, s string) []byte {
	return append(AppendStringInString(append(dst, '"'), s), '"')
}

// TestAppendStringInString holds the one-pass double escaping to the two
// passes, and to encoding/json's two encodings, on every special at every
// position of a short text, on every string of one and two bytes, and on
// the demo's multi-byte document.
func TestAppendStringInString(t *testing.T) {
	cases := map[string]string{"empty": "", "demo document": string(githubemu.MultiByteDocument(64 << 10))}
	for _, special := range specials {
		for pos := range 17 {
			cases[special+"@"+string(rune('a'+pos))] = strings.Repeat("x", pos) + special + strings.Repeat("y", 16-pos)
		}
		cases[special+" twice"] = special + special
	}
	for name, text := range cases {
		want := marshal(t, string(marshal(t, text, false)), true)
		if got := oneInTwo([]byte("prefix"), text); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("%s: %.200q, want %.200q", name, got, want)
		}
		if composed := twoPass(nil, text); !bytes.Equal(composed, want) {
			t.Fatalf("%s: the two passes write %.200q, encoding/json %.200q", name, composed, want)
		}
	}
	var two [2]byte
	for i := range 1 << 16 {
		two[0], two[1] = byte(i>>8), byte(i)
		for _, s := range []string{string(two[:1]), string(two[:])} {
			if got, want := oneInTwo(nil, s), twoPass(nil, s); !bytes.Equal(got, want) {
				t.Fatalf("% x: %q, want %q", s, got, want)
			}
		}
	}
}

// FuzzAppendStringInString: the one-pass double escaping writes what the
// two passes write, for any bytes.
func FuzzAppendStringInString(f *testing.F) {
	for _, s := range specials {
		f.Add("a" + s + "b")
	}
	f.Add(`{"content":"<a href=\"x\">&amp;</a>\u2028"}` + "\x00\xff\n")
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := oneInTwo(nil, text), twoPass(nil, text); !bytes.Equal(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	})
}

// BenchmarkAppendStringInString is a 64 KiB fragment's text written into
// the answer's text block: in one pass, against the two passes the owned
// path made before (the result's JSON into a buffer, copied into the
// text, escaped again into the answer).
func BenchmarkAppendStringInString(b *testing.B) {
	doc := string(githubemu.MultiByteDocument(64 << 10))
	b.Run("one-pass", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		buf := make([]byte, 0, 2*len(doc))
		for b.Loop() {
			buf = oneInTwo(buf[:0], doc)
		}
	})
	b.Run("two-pass", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		inner, buf := make([]byte, 0, 2*len(doc)), make([]byte, 0, 2*len(doc))
		for b.Loop() {
			inner = AppendStringKeepHTML(inner[:0], doc)
			buf = AppendString(buf[:0], string(inner))
		}
	})
}
