package evidencetest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

func diffOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>8)
	}
	return b
}

// TestLenMatchesWrite: Len is the exact length Write writes, for every
// option, around every base64 and chunk boundary.
func TestLenMatchesWrite(t *testing.T) {
	options := map[string]func(n int64) []et.Option{
		"none":            func(int64) []et.Option { return nil },
		"data first":      func(int64) []et.Option { return []et.Option{et.DataFirst()} },
		"spaced":          func(int64) []et.Option { return []et.Option{et.Spaced()} },
		"trailing":        func(int64) []et.Option { return []et.Option{et.Trailing(" \n")} },
		"truncate to":     func(int64) []et.Option { return []et.Option{et.TruncateTo(700)} },
		"truncate by":     func(int64) []et.Option { return []et.Option{et.TruncateBy(5)} },
		"override":        func(int64) []et.Option { return []et.Option{et.Override("repository.id", `"a long string value"`)} },
		"remove":          func(int64) []et.Option { return []et.Option{et.Remove("generation.head")} },
		"remove data":     func(int64) []et.Option { return []et.Option{et.Remove("data")} },
		"duplicate":       func(int64) []et.Option { return []et.Option{et.Duplicate("observations")} },
		"duplicate data":  func(int64) []et.Option { return []et.Option{et.Duplicate("data")} },
		"extra":           func(int64) []et.Option { return []et.Option{et.Extra("content")} },
		"wrong sha256":    func(int64) []et.Option { return []et.Option{et.WrongSHA256()} },
		"wrong count":     func(int64) []et.Option { return []et.Option{et.WrongByteCount()} },
		"line breaks":     func(int64) []et.Option { return []et.Option{et.LineBreaks()} },
		"url alphabet":    func(int64) []et.Option { return []et.Option{et.URLAlphabet()} },
		"bad padding":     func(int64) []et.Option { return []et.Option{et.BadPadding()} },
		"pad bits":        func(n int64) []et.Option { return ifPadded(n, et.NonZeroPadBits()) },
		"corrupt byte":    func(n int64) []et.Option { return ifNonEmpty(n, et.CorruptByteAt(n-1)) },
		"invalid char":    func(n int64) []et.Option { return ifNonEmpty(n, et.InvalidCharAt(n/2)) },
		"escaped char":    func(n int64) []et.Option { return ifNonEmpty(n, et.EscapedCharAt(n-1)) },
		"escaped + lines": func(n int64) []et.Option { return ifNonEmpty(n, et.EscapedCharAt(0), et.LineBreaks(), et.BadPadding()) },
	}
	for _, size := range []int{0, 1, 2, 3, 56, 57, 58, 12287, 12288, 12289, 30000} {
		diff := diffOf(size)
		e := et.Sample().WithDiff(diff)
		for name, opts := range options {
			o := opts(int64(size))
			want, err := et.Len(e, o...)
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", name, size, err)
			}
			var b bytes.Buffer
			n, err := et.Write(&b, e, iotest.HalfReader(bytes.NewReader(diff)), o...)
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", name, size, err)
			}
			if n != want || int64(b.Len()) != want {
				t.Fatalf("%s, %d bytes: Len %d, Write reported %d and wrote %d", name, size, want, n, b.Len())
			}
		}
	}
}

func ifNonEmpty(n int64, o ...et.Option) []et.Option {
	if n == 0 {
		return nil
	}
	return o
}

func ifPadded(n int64, o ...et.Option) []et.Option {
	if n%3 == 0 {
		return nil
	}
	return o
}

// TestCanonical: the default output is compact JSON in the member order of
// docs/architecture.md#evidence-entity whose data is the standard base64 of
// the diff.
func TestCanonical(t *testing.T) {
	diff := diffOf(1000)
	b := et.Bytes(et.Sample(), diff)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var data string
	json.Unmarshal(doc["data"], &data)
	if data != base64.StdEncoding.EncodeToString(diff) {
		t.Fatal("data is not the standard base64 of the diff")
	}
	var compact bytes.Buffer
	json.Compact(&compact, b)
	if !bytes.Equal(compact.Bytes(), b) {
		t.Fatal("canonical output is not compact")
	}
	order := []string{"schema", "repository", "pull_request", "object_format", "generation", "observations", "content", "data"}
	last := -1
	for _, name := range order {
		i := bytes.Index(b, []byte(`"`+name+`":`))
		if i <= last {
			t.Fatalf("member %q out of order", name)
		}
		last = i
	}
	if !bytes.HasPrefix(et.Bytes(et.Sample(), diff, et.DataFirst()), []byte(`{"data":"AIMG`)) {
		t.Fatal("DataFirst does not put data first")
	}
}

func TestFaultsChangeWhatTheySay(t *testing.T) {
	diff := diffOf(10)
	good := et.Bytes(et.Sample(), diff)
	for name, tc := range map[string]struct {
		opt  et.Option
		want string
	}{
		// The base64 of the 10 bytes is "AIMGiQyPEpUYmw==".
		"pad bits":     {et.NonZeroPadBits(), `"data":"AIMGiQyPEpUYmx=="`},
		"bad padding":  {et.BadPadding(), `"data":"AIMGiQyPEpUYmw"}`},
		"escaped char": {et.EscapedCharAt(0), `"data":"\u00`},
		"invalid char": {et.InvalidCharAt(4), `*`},
		"duplicate":    {et.Duplicate("content.sha256"), `"sha256":"`},
		"extra":        {et.Extra(""), `,"x_unknown":1}`},
	} {
		b := et.Bytes(et.Sample(), diff, tc.opt)
		if bytes.Equal(b, good) || !bytes.Contains(b, []byte(tc.want)) {
			t.Errorf("%s: %s", name, b)
		}
	}
}

func TestOptionsThatCannotApply(t *testing.T) {
	e := et.Sample().WithDiff(diffOf(3))
	for name, o := range map[string]et.Option{
		"pad bits without padding": et.NonZeroPadBits(),
		"corrupt beyond the end":   et.CorruptByteAt(3),
		"unknown path":             et.Override("repository.nope", "1"),
		"path through a scalar":    et.Remove("schema.x"),
	} {
		if _, err := et.Len(e, o); err == nil {
			t.Errorf("%s: Len accepted it", name)
		}
		if n, err := et.Write(io.Discard, e, bytes.NewReader(diffOf(3)), o); err == nil || n != 0 {
			t.Errorf("%s: Write wrote %d bytes, err %v", name, n, err)
		}
	}
}

func TestWriteChecksTheDeclaredDigest(t *testing.T) {
	e := et.Sample().WithDiff([]byte("abc"))
	if _, err := et.Write(io.Discard, e, strings.NewReader("abd")); err == nil {
		t.Fatal("a stream that differs from ByteCount/SHA256 went unnoticed")
	}
}

func TestDigest(t *testing.T) {
	n, sum, err := et.Digest(strings.NewReader("abc"))
	want := sha256.Sum256([]byte("abc"))
	if err != nil || n != 3 || sum != hex.EncodeToString(want[:]) {
		t.Fatalf("Digest = %d, %s, %v", n, sum, err)
	}
}
