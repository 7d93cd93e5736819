package documents

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/jsonwire"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// referenceJSON is the encoding AppendJSON must write: encoding/json's,
// without HTML escaping, as toolset.EncodeJSON writes a result.
func referenceJSON(t testing.TB, f Fragment) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// checkFragmentJSON holds AppendJSON to encoding/json, and
// AppendJSONString to that encoding as a JSON string (what the owned
// tools/call path wrote into the answer's text block from it).
func checkFragmentJSON(t *testing.T, name string, f Fragment) {
	t.Helper()
	ref := referenceJSON(t, f)
	if got, want := f.AppendJSON([]byte("prefix")), append([]byte("prefix"), ref...); !bytes.Equal(got, want) {
		t.Errorf("%s: AppendJSON:\n got %.300q\nwant %.300q", name, got, want)
	}
	if got, want := f.AppendJSONString([]byte("prefix")), jsonwire.AppendString([]byte("prefix"), string(ref)); !bytes.Equal(got, want) {
		t.Errorf("%s: AppendJSONString:\n got %.300q\nwant %.300q", name, got, want)
	}
}

// fullFragment is a fragment with every member set.
func fullFragment() Fragment {
	return Fragment{
		Content: "# Handbook\n\nZeile äöü — 日本語 😀\n", StartByte: 65536, EndByte: 131072, FileBytes: 204800,
		FileSHA256: strings.Repeat("a", 64), FragmentSHA256: strings.Repeat("b", 64), CommitSHA: strings.Repeat("c0", 20),
		Path: "docs/handbook.md", NextCursor: "v1.eyJwIjoicHJqXzEifQ.c2ln",
	}
}

// TestFragmentJSONMatchesEncodingJSON holds the hand encoder to
// encoding/json on the zero fragment, a full one, the last fragment (no
// cursor), every escape a string member can need, and fragments of the
// demo's document at many offsets; and checks that every member of
// Fragment is one the full fragment sets, so a member added to Fragment
// and not to AppendJSON fails here.
func TestFragmentJSONMatchesEncodingJSON(t *testing.T) {
	full := fullFragment()
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullFragment leaves %s empty", v.Type().Field(i).Name)
		}
	}
	escapes := "\"\\<>&\x00\b\f\n\r\t\x1f\x7f \xff\xfe é \u2028\u2029 😀 \xe2\x80 \ufffd"
	cases := map[string]Fragment{"zero": {}, "full": full}
	for name, change := range map[string]func(*Fragment){
		"last fragment":   func(f *Fragment) { f.NextCursor = "" },
		"escaped content": func(f *Fragment) { f.Content = escapes },
		"escaped members": func(f *Fragment) {
			f.FileSHA256, f.FragmentSHA256, f.CommitSHA, f.Path, f.NextCursor = escapes, "<", ">", "&", "\u2028"
		},
		"negatives":        func(f *Fragment) { f.StartByte, f.EndByte, f.FileBytes = -1, -1<<63, 1<<63-1 },
		"empty content":    func(f *Fragment) { f.Content, f.StartByte, f.EndByte = "", 7, 7 },
		"HTML in the text": func(f *Fragment) { f.Content = "<script>alert('&amp;')</script> a < b > c && d" },
	} {
		f := full
		change(&f)
		cases[name] = f
	}
	doc := string(githubemu.MultiByteDocument(200 << 10))
	for start := 0; start < len(doc); start += 4093 {
		f := full
		f.Content = doc[start:min(start+MaxFragmentBytes, len(doc))]
		cases["demo document from "+strconv.Itoa(start)] = f
	}
	for name, f := range cases {
		checkFragmentJSON(t, name, f)
	}
}

// FuzzFragmentJSON: for any strings and numbers, AppendJSON writes
// encoding/json's bytes, and AppendJSONString those bytes as a JSON
// string.
func FuzzFragmentJSON(f *testing.F) {
	full := fullFragment()
	f.Add(full.Content, full.Path, full.NextCursor, full.StartByte, full.EndByte)
	f.Add("", "", "", int64(0), int64(0))
	f.Add("\"\\<>&\x00\u2028\u2029\xff", "a<b>&c", "\xe2\x80", int64(-1), int64(1<<62))
	f.Fuzz(func(t *testing.T, content, path, cursor string, start, end int64) {
		checkFragmentJSON(t, "fuzzed", Fragment{Content: content, StartByte: start, EndByte: end, FileBytes: end - start,
			FileSHA256: cursor, FragmentSHA256: path, CommitSHA: content, Path: path, NextCursor: cursor})
	})
}

// BenchmarkFragmentJSON is the encoding of a 64 KiB fragment of the demo's
// document as a tool result: AppendJSON against encoding/json, and
// AppendJSONString against the two passes it fuses.
func BenchmarkFragmentJSON(b *testing.B) {
	f := fullFragment()
	f.Content = string(githubemu.MultiByteDocument(200 << 10)[:MaxFragmentBytes])
	// AppendJSONString is the answer's text block from the fragment in
	// one pass; AppendJSON+AppendString below is how the owned path wrote
	// it before (its JSON copied into the text, escaped again).
	for _, enc := range []struct {
		name   string
		append func(dst []byte) []byte
	}{{"AppendJSON", f.AppendJSON}, {"AppendJSONString", f.AppendJSONString}} {
		b.Run(enc.name, func(b *testing.B) {
			b.SetBytes(int64(len(f.Content)))
			b.ReportAllocs()
			buf := make([]byte, 0, 2*len(f.Content))
			for b.Loop() {
				buf = enc.append(buf[:0])
			}
		})
	}
	b.Run("AppendJSON+AppendString", func(b *testing.B) {
		b.SetBytes(int64(len(f.Content)))
		b.ReportAllocs()
		inner, buf := make([]byte, 0, 2*len(f.Content)), make([]byte, 0, 2*len(f.Content))
		for b.Loop() {
			inner = f.AppendJSON(inner[:0])
			buf = jsonwire.AppendString(buf[:0], string(inner))
		}
	})
	b.Run("json.Encoder", func(b *testing.B) {
		b.SetBytes(int64(len(f.Content)))
		b.ReportAllocs()
		var buf strings.Builder
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(f)
		}
	})
}

// TestFragmentJSONAllocatesOnce: a fragment of the demo's text is written
// into one allocation, not a buffer grown step by step from nothing (the
// result encoder's and the owned path's pools are empty after every
// collection), as JSON and as a JSON string.
func TestFragmentJSONAllocatesOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector mean nothing")
	}
	f := fullFragment()
	f.Content = string(githubemu.MultiByteDocument(200 << 10)[:MaxFragmentBytes])
	for name, write := range map[string]func([]byte) []byte{"AppendJSON": f.AppendJSON, "AppendJSONString": f.AppendJSONString} {
		if n := testing.AllocsPerRun(20, func() { _ = write(nil) }); n != 1 {
			t.Errorf("%s: %v allocations, want 1", name, n)
		}
	}
}
