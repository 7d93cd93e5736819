package documents

import (
	"testing"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// TestValidUTF8 pins validUTF8 to utf8.Valid for every lead and second
// byte, with third and fourth bytes on both sides of the continuation
// range, cut short at every length, after nothing, a multi-byte character
// or ASCII that puts it across an eight-byte block, and before ASCII long
// enough for the eight-byte skip; and on the demo's document whole and cut
// inside a character.
func TestValidUTF8(t *testing.T) {
	// Third and fourth bytes are continuations or not, whatever the lead.
	tails := []byte{0x7f, 0x80, 0xbf, 0xc0}
	buf := make([]byte, 0, 32)
	for lead := range 256 {
		for second := range 256 {
			for _, third := range tails {
				for _, fourth := range tails {
					seq := []byte{byte(lead), byte(second), third, fourth}
					for n := 1; n <= len(seq); n++ {
						for _, before := range []string{"", "é", "1234567"} {
							for _, after := range []string{"", "12345678"} {
								p := append(append(append(buf[:0], before...), seq[:n]...), after...)
								if got, want := validUTF8(p), utf8.Valid(p); got != want {
									t.Fatalf("% x: %v, want %v", p, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
	doc := githubemu.MultiByteDocument(200 << 10)
	for _, p := range [][]byte{doc, doc[:len(doc)-1], doc[1:], nil} {
		if got, want := validUTF8(p), utf8.Valid(p); got != want {
			t.Fatalf("%d bytes of the demo document: %v, want %v", len(p), got, want)
		}
	}
}

// FuzzValidUTF8: validUTF8 agrees with utf8.Valid on any bytes.
func FuzzValidUTF8(f *testing.F) {
	for _, s := range []string{"", "plain ASCII text, longer than eight", "Zeile äöü ß — 日本語 😀𝄞", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x9f\xbf", "abcdefgh\xc3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := validUTF8(p), utf8.Valid(p); got != want {
			t.Fatalf("% x: %v, want %v", p, got, want)
		}
	})
}

// BenchmarkValidUTF8 is the check of the demo's whole document that every
// fragment makes: validUTF8 against utf8.Valid.
func BenchmarkValidUTF8(b *testing.B) {
	doc := githubemu.MultiByteDocument(200 << 10)
	for name, valid := range map[string]func([]byte) bool{"validUTF8": validUTF8, "utf8.Valid": utf8.Valid} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if !valid(doc) {
					b.Fatal("refused")
				}
			}
		})
	}
}
