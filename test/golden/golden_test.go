package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNormalizerText(t *testing.T) {
	const (
		src  = "src_abcdefghijklmnopqrstuvwxyz"
		src2 = "src_234567abcdefghijklmnopqrst"
		wfl  = "wfl_zzzzzzzzzzzzzzzzzzzzzzzzzz"
		sha  = "0123456789abcdef0123456789abcdef01234567"
		sha2 = "fedcba9876543210fedcba9876543210fedcba98"
		s256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	cases := []struct {
		name, in, want string
	}{
		{"UTC time", `"created_at":"2026-11-30T21:39:41Z"`, `"created_at":"<time>"`},
		{"offset time with fraction", `"at":"2026-11-30T21:39:41.123456+01:00"`, `"at":"<time>"`},
		{"a date alone stays", `"day":"2026-11-30"`, `"day":"2026-11-30"`},
		{"loopback ports", "http://127.0.0.1:43127/x and localhost:80", "http://127.0.0.1:<port>/x and localhost:<port>"},
		{"a public host keeps its port", "https://gw.example:8443/", "https://gw.example:8443/"},
		{"IDs numbered by kind, in order", src + " " + wfl + " " + src2 + " " + src, "<src_1> <wfl_1> <src_2> <src_1>"},
		{"an ID of the wrong length stays", "src_abc", "src_abc"},
		{"uppercase is not a store ID", "src_ABCDEFGHIJKLMNOPQRSTUVWXYZ", "src_ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
		{"commit SHAs numbered", sha + ".." + sha2 + " " + sha, "<sha1_1>..<sha1_2> <sha1_1>"},
		{"SHA-256 of content stays", s256, s256},
		{"cursors", `{"cursor":"abc.def","next_cursor": "x"}`, `{"cursor":"<cursor>","next_cursor": "<cursor>"}`},
		{"indented cursor", "\"next_cursor\": \"prdiff1.e30.AAAA\"", "\"next_cursor\": \"<cursor>\""},
		{"null cursor stays", `"next_cursor":null`, `"next_cursor":null`},
		{"a member merely named like one stays", `"cursor_bytes":"12"`, `"cursor_bytes":"12"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewNormalizer().Text(tc.in); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	// One Normalizer keeps its names across texts.
	n := NewNormalizer()
	if a, b := n.Text(src2), n.Text(src+" "+src2); a != "<src_1>" || b != "<src_2> <src_1>" {
		t.Fatalf("across texts: %s, %s", a, b)
	}
}

// fakeTB records what Compare reports instead of failing the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}

func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

func compare(path string, got []byte) (failure string) {
	f := &fakeTB{}
	defer func() {
		if r := recover(); r != nil && r != any(f) {
			panic(r)
		}
		failure = f.failed
	}()
	Compare(f, path, got)
	return ""
}

func TestCompare(t *testing.T) {
	if *update {
		t.Skip("-update rewrites instead of comparing")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.golden")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		got  string
		want string // substring of the failure; "" for a match
	}{
		{"equal", path, "a\nb\nc\n", ""},
		{"changed line", path, "a\nB\nc\n", "first difference at line 2"},
		{"missing trailing newline", path, "a\nb\nc", "golden has 4 lines, got 3"},
		{"no golden file", filepath.Join(dir, "absent"), "a", "run go test -update to create it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compare(tc.path, []byte(tc.got))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("failure %q, want one containing %q", got, tc.want)
			}
		})
	}
	if d := Diff([]byte("a\nb\n"), []byte("a\nx\n")); !strings.Contains(d, "- b\n") || !strings.Contains(d, "+ x\n") || !strings.Contains(d, "  a\n") {
		t.Fatalf("diff:\n%s", d)
	}
}
