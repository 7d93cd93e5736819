package github

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// The fuzz targets of the GitHub client's parsers of untrusted input:
// FuzzContentsJSON (the Contents answer every document read trusts after
// its checks) and FuzzTokenAnswer (the installation token route's answer).
// Their committed corpora (testdata/fuzz/…) are captured from the GitHub
// emulator's routes and fault switches by TestFuzzSeedsFromEmulator
// (fuzzseeds_test.go), plus byte-level attacks on genuine answers.

// FuzzContentsJSON: parseFile never panics; a refusal is one of its
// documented codes; an accepted answer is a regular file at exactly the
// requested path whose bytes have the reported size, hash to the reported
// blob ID and fit the 1 MiB bound, and an independent reading with exact
// member names agrees on type, path and size.
func FuzzContentsJSON(f *testing.F) {
	f.Add([]byte(`{"type":"file","encoding":"base64","size":2,"path":"a.md","sha":"`+BlobSHA([]byte("hi"))+`","content":"aGk=\n"}`), "a.md")
	f.Add([]byte(`[{"type":"file"}]`), "docs")
	f.Add([]byte(`{"type":"file","encoding":"base64","size":2,"path":"a.md","sha":"`+BlobSHA([]byte("hi"))+`","content":"aGk=\n","Content":"aGk=\n"}`), "a.md")
	f.Add([]byte(`{"type":"file","encoding":"base64","size":2,"path":"a.md","sha":"`+BlobSHA([]byte("hi"))+`","content":"aG\nk=","x":[}`), "a.md")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		file, err := parseFile(body, path)
		// The split reading of the base64 (contentlines.go) must agree
		// with encoding/json reading the whole answer.
		whole, wholeErr := parseAnswer(body, path, false)
		if (err == nil) != (wholeErr == nil) || err != nil && toolerr.As(err).Code != toolerr.As(wholeErr).Code ||
			err == nil && (!bytes.Equal(file.Content, whole.Content) || file.BlobSHA != whole.BlobSHA || file.Path != whole.Path) {
			t.Fatalf("split reading: %v, %v; whole answer: %v, %v", file, err, whole, wholeErr)
		}
		if err != nil {
			var te *toolerr.Error
			if file != nil || !errors.As(err, &te) {
				t.Fatalf("refusal %v with %v", err, file)
			}
			switch te.Code {
			case toolerr.ProviderMalformed, toolerr.NotRegularFile, toolerr.FileTooLarge:
			default:
				t.Fatalf("unexpected code %s", te.Code)
			}
			if strings.Contains(te.Message, path) && path != "" && len(path) > 3 {
				t.Fatalf("the refusal quotes the answer's text: %q", te.Message)
			}
			return
		}
		switch {
		case file.Path != path:
			t.Fatalf("accepted path %q for %q", file.Path, path)
		case len(file.Content) > MaxFileBytes:
			t.Fatalf("accepted %d bytes", len(file.Content))
		case BlobSHA(file.Content) != file.BlobSHA:
			t.Fatal("accepted content that does not hash to its blob ID")
		}
		var ref map[string]json.RawMessage
		if err := json.Unmarshal(bytes.TrimSpace(body), &ref); err != nil {
			t.Fatalf("accepted what is not a JSON object: %v", err)
		}
		var typ, p string
		var size int64
		if json.Unmarshal(ref["type"], &typ) != nil || json.Unmarshal(ref["path"], &p) != nil || json.Unmarshal(ref["size"], &size) != nil {
			t.Fatalf("accepted an answer whose exact members type, path, size do not read: %s", body)
		}
		if typ != "file" || p != path || size != int64(len(file.Content)) {
			t.Fatalf("an exact reading sees type %q path %q size %d; parseFile accepted %d bytes at %q", typ, p, size, len(file.Content), file.Path)
		}
	})
}

// FuzzTokenAnswer: parseTokenAnswer never panics, refuses with
// provider_malformed only, and what it accepts is a usable single header
// value that expires in the future.
func FuzzTokenAnswer(f *testing.F) {
	f.Add([]byte(`{"token":"ghs_x","expires_at":"2030-01-01T00:00:00Z"}`))
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		tok, err := parseTokenAnswer(body, now)
		if err != nil {
			var te *toolerr.Error
			if !errors.As(err, &te) || te.Code != toolerr.ProviderMalformed || tok.secret != "" {
				t.Fatalf("refusal %v with %q", err, tok.secret)
			}
			if tok.secret != "" && strings.Contains(te.Message, tok.secret) {
				t.Fatal("the refusal quotes the token")
			}
			return
		}
		if tok.secret == "" || len(tok.secret) > 4096 || strings.ContainsAny(tok.secret, " \t\r\n\x00") || !tok.expires.After(now) {
			t.Fatalf("accepted token %q expiring %v", tok.secret, tok.expires)
		}
		for _, c := range []byte(tok.secret) {
			if c <= ' ' || c >= 0x7f {
				t.Fatalf("accepted a token with byte %#x", c)
			}
		}
	})
}
