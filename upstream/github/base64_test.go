package github

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/segmentio/asm/cpu"
	"github.com/segmentio/asm/cpu/x86"
)

// stdStrict is the reference strictBase64 must agree with.
var stdStrict = base64.StdEncoding.Strict()

// checkDecodersAgree fails t unless strictBase64 and encoding/base64's
// strict decoder both refuse g or both decode it to the same bytes, and
// strictBase64 writes nothing past the room the blob reader gives it
// (three bytes a group).
func checkDecodersAgree(t *testing.T, name string, g []byte) {
	t.Helper()
	room := len(g) / 4 * 3
	want := make([]byte, room)
	wantN, wantErr := stdStrict.Decode(want, g)
	const guard = 64
	got := bytes.Repeat([]byte{0xA5}, room+guard)
	n, err := strictBase64.Decode(got[:room], g)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, encoding/base64's %v", name, err, wantErr)
	}
	if err == nil && (n != wantN || !bytes.Equal(got[:n], want[:wantN])) {
		t.Fatalf("%s: decoded %d bytes %x, encoding/base64 %d bytes %x", name, n, got[:n], wantN, want[:wantN])
	}
	if !bytes.Equal(got[room:], bytes.Repeat([]byte{0xA5}, guard)) {
		t.Fatalf("%s: wrote past the %d bytes of room", name, room)
	}
}

// TestStrictDecodersAgree holds strictBase64 to encoding/base64's strict
// decoder on the runs the blob reader decodes: whole 4-character groups,
// from one group to a full stage and over, with a refused or skipped
// byte, padding or non-zero pad bits at every position of the blocks the
// AVX2 loop reads, and the line breaks (raw "\r" and "\n") the decoders
// skip.
func TestStrictDecodersAgree(t *testing.T) {
	if !cpu.X86.Has(x86.AVX2) {
		t.Log("no AVX2: strictBase64 is encoding/base64 alone here")
	}
	var raw []byte
	for i := range 3 * stageBytes {
		raw = append(raw, byte(i*7919>>3))
	}
	text := []byte(base64.StdEncoding.EncodeToString(raw))
	for _, size := range []int{4, 8, 32, 44, 48, 60, 64, 96, 128, 4092, stageBytes, 2 * stageBytes} {
		checkDecodersAgree(t, "whole groups", text[:size])
		for _, end := range []string{"A===", "AA==", "AAA=", "AB==", "AAB=", "====", "A=A=", "=AAA"} {
			g := append(append([]byte{}, text[:size-4]...), end...)
			checkDecodersAgree(t, "ending "+end, g)
		}
		for _, bad := range []byte{'=', '\n', '\r', '-', '_', '.', ' ', 0, 0x80, 0xff, '"', '\\'} {
			for pos := 0; pos < min(size, 100); pos++ {
				g := append([]byte{}, text[:size]...)
				g[pos] = bad
				checkDecodersAgree(t, "byte "+strings.TrimSpace(string(rune(bad)))+" inside", g)
			}
		}
	}
	// Padding, then more groups: the decoders refuse data after the padding.
	checkDecodersAgree(t, "padding inside", []byte("aGk="+strings.Repeat("A", 60)))
}

// FuzzStrictDecoders: on any run of whole groups, strictBase64 and
// encoding/base64's strict decoder refuse the same and decode the same.
func FuzzStrictDecoders(f *testing.F) {
	f.Add([]byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("document "), 40))))
	f.Add([]byte(strings.Repeat("QUJD", 20) + "QQ=="))
	f.Add([]byte(strings.Repeat("QUJD", 12) + "\n" + strings.Repeat("QUJD", 12)))
	f.Add([]byte(strings.Repeat("QUJD", 12) + "QQ==" + strings.Repeat("QUJD", 12)))
	f.Fuzz(func(t *testing.T, g []byte) {
		checkDecodersAgree(t, "fuzzed", g[:len(g)&^3])
	})
}
