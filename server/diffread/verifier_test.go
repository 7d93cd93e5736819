package diffread_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
)

var target = diffread.Target{Owner: "team", Repo: "project", Index: 7}

// testDiff is 300 bytes: UTF-8 text, then bytes that are not UTF-8, then
// text again, so that 100-byte pages carry text, null and text.
func testDiff() []byte {
	var b bytes.Buffer
	for b.Len() < 100 {
		b.WriteString("+line é\n")
	}
	b.Truncate(100)
	b.Write(bytes.Repeat([]byte{0xff, 0x00}, 50))
	for b.Len() < 300 {
		b.WriteString("-older\n")
	}
	b.Truncate(300)
	return b.Bytes()
}

func serverOptions(diff []byte) diffreadtest.Options {
	return diffreadtest.Options{Owner: target.Owner, Repo: target.Repo, Index: target.Index,
		Diff: diffreadtest.Bytes(diff), Window: 100}
}

// feed runs a verifier over the pages an honest server would send, each
// first changed by edit and sent through JSON, until eof or an error.
func feed(t *testing.T, o diffreadtest.Options, edit func(n int, p *diffreadtest.ServedPage), w *bytes.Buffer) (*diffread.Result, error) {
	t.Helper()
	return feedLimited(t, o, edit, 0, w)
}

// feedLimited is feed with Verifier.MaxBytes. Pages are decoded with
// encoding/json, not DecodePage, so that the verifier's own checks of the
// manifest show: they stand for pages some other code decoded.
func feedLimited(t *testing.T, o diffreadtest.Options, edit func(n int, p *diffreadtest.ServedPage), maxBytes int64, w *bytes.Buffer) (*diffread.Result, error) {
	t.Helper()
	v := diffread.NewVerifier(target, w)
	v.MaxBytes = maxBytes
	off := int64(0)
	for n := 1; n < 100; n++ {
		p := diffreadtest.NewServedPage(o, off)
		if edit != nil {
			edit(n, p)
		}
		text, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		page := new(diffread.Page)
		if err := json.Unmarshal(text, page); err != nil {
			t.Fatalf("page %d does not decode: %v", n, err)
		}
		if err := v.Add(page); err != nil {
			return nil, err
		}
		if page.EOF {
			return v.Finish()
		}
		off = page.NextByteOffset
	}
	t.Fatal("no eof after 100 pages")
	return nil, nil
}

// flipByte changes one byte of the page's data, and of its text when it
// has one, so that only the hash can tell.
func flipByte(p *diffreadtest.ServedPage) {
	b, _ := base64.StdEncoding.DecodeString(p.Data)
	b[len(b)/2] ^= 0x01
	p.Data = base64.StdEncoding.EncodeToString(b)
	if p.Text != nil {
		s := string(b)
		p.Text = &s
	}
}

// onPage is an edit of page n only, for feed.
func onPage(page int, f func(p *diffreadtest.ServedPage)) func(int, *diffreadtest.ServedPage) {
	return func(n int, p *diffreadtest.ServedPage) {
		if n == page {
			f(p)
		}
	}
}

func TestVerifierChecks(t *testing.T) {
	diff := testDiff()
	o := serverOptions(diff)
	manifest := func(p *diffreadtest.ServedPage, member, key string, v any) {
		p.Manifest[member].(map[string]any)[key] = v
	}
	for _, c := range []struct {
		name  string
		edit  func(int, *diffreadtest.ServedPage)
		page  int
		check diffread.Check
	}{
		{"another pull request requested", onPage(1, func(p *diffreadtest.ServedPage) { p.Requested.Index = 8 }), 1, diffread.CheckRequested},
		{"the manifest of another pull request", onPage(1, func(p *diffreadtest.ServedPage) { manifest(p, "pull_request", "index", 8) }), 1, diffread.CheckManifest},
		{"the manifest of another repository", onPage(1, func(p *diffreadtest.ServedPage) { manifest(p, "repository", "name", "other") }), 1, diffread.CheckManifest},
		{"a manifest with a short sha256", onPage(1, func(p *diffreadtest.ServedPage) { manifest(p, "content", "sha256", "abc") }), 1, diffread.CheckManifest},
		{"content changes on page 2", onPage(2, func(p *diffreadtest.ServedPage) { manifest(p, "content", "sha256", strings.Repeat("0", 64)) }), 2, diffread.CheckManifest},
		{"head moves on page 3", onPage(3, func(p *diffreadtest.ServedPage) {
			p.Manifest["generation"].(map[string]any)["head"].(map[string]any)["oid"] = strings.Repeat("d", 40)
		}), 3, diffread.CheckManifest},
		{"another contract", onPage(1, func(p *diffreadtest.ServedPage) { p.Contract = "atomic" }), 1, diffread.CheckContract},
		{"an atomic snapshot claimed", onPage(2, func(p *diffreadtest.ServedPage) { p.AtomicLatestPRSnapshot = true }), 2, diffread.CheckContract},
		{"another encoding", onPage(2, func(p *diffreadtest.ServedPage) { p.Encoding = "hex" }), 2, diffread.CheckContract},
		{"whole diff not verified", onPage(2, func(p *diffreadtest.ServedPage) { p.WholeDiffVerified = false }), 2, diffread.CheckWholeDiffVerified},
		{"data that is not base64", onPage(2, func(p *diffreadtest.ServedPage) { p.Data = "!" + p.Data[1:] }), 2, diffread.CheckData},
		{"base64 with a line break", onPage(1, func(p *diffreadtest.ServedPage) { p.Data = p.Data[:8] + "\n" + p.Data[8:] }), 1, diffread.CheckData},
		{"base64 with non-zero pad bits", onPage(1, func(p *diffreadtest.ServedPage) {
			// 100 bytes end in one byte and "==": its last character carries 4 pad bits.
			p.Data = p.Data[:len(p.Data)-3] + "B=="
		}), 1, diffread.CheckData},
		{"chunk_bytes one too many", onPage(2, func(p *diffreadtest.ServedPage) { p.ChunkBytes++; p.NextByteOffset++ }), 2, diffread.CheckChunkBytes},
		{"a tampered chunk", onPage(2, flipByte), 2, diffread.CheckChunkSHA256},
		{"a tampered text chunk", onPage(3, flipByte), 3, diffread.CheckChunkSHA256},
		{"a text that differs from the data", onPage(1, func(p *diffreadtest.ServedPage) { s := strings.Replace(*p.Text, "é", "e", 1); p.Text = &s }), 1, diffread.CheckText},
		{"null text for UTF-8 bytes", onPage(3, func(p *diffreadtest.ServedPage) { p.Text = nil }), 3, diffread.CheckText},
		{"text for bytes that are not UTF-8", onPage(2, func(p *diffreadtest.ServedPage) { s := "x"; p.Text = &s }), 2, diffread.CheckText},
		{"next_byte_offset off by one", onPage(1, func(p *diffreadtest.ServedPage) { p.NextByteOffset++ }), 1, diffread.CheckNextByteOffset},
		{"eof claimed early", onPage(2, func(p *diffreadtest.ServedPage) { p.EOF, p.NextCursor = true, nil }), 2, diffread.CheckEOF},
		{"no eof at the end", onPage(3, func(p *diffreadtest.ServedPage) { p.EOF, p.NextCursor = false, new("c") }), 3, diffread.CheckEOF},
		{"a cursor at eof", onPage(3, func(p *diffreadtest.ServedPage) { p.NextCursor = new("c") }), 3, diffread.CheckNextCursor},
		{"no cursor before eof", onPage(1, func(p *diffreadtest.ServedPage) { p.NextCursor = nil }), 1, diffread.CheckNextCursor},
		{"an empty cursor before eof", onPage(1, func(p *diffreadtest.ServedPage) { p.NextCursor = new("") }), 1, diffread.CheckNextCursor},
		{"pages past byte_count", func(_ int, p *diffreadtest.ServedPage) { manifest(p, "content", "byte_count", 250) }, 3, diffread.CheckByteCount},
		{"a wrong final hash", func(_ int, p *diffreadtest.ServedPage) { manifest(p, "content", "sha256", strings.Repeat("ab", 32)) }, 3, diffread.CheckSHA256},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w bytes.Buffer
			res, err := feed(t, o, c.edit, &w)
			var ve *diffread.VerificationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, %v; want a verification error", res, err)
			}
			if ve.Page != c.page || ve.Check != c.check {
				t.Fatalf("failed on page %d, %s (%v); want page %d, %s", ve.Page, ve.Check, err, c.page, c.check)
			}
			// Only the pages before the one that failed were written; the
			// whole-diff checks fail after every page was.
			written := int64(100 * (c.page - 1))
			if c.check == diffread.CheckSHA256 {
				written = 300
			}
			if ve.Offset != written || !bytes.Equal(w.Bytes(), diff[:written]) {
				t.Fatalf("offset %d, %d bytes written; want %d of the diff", ve.Offset, w.Len(), written)
			}
			if ve.Expected == "" || ve.Got == "" || ve.Expected == ve.Got {
				t.Fatalf("expected %q, got %q", ve.Expected, ve.Got)
			}
			t.Log(err)
		})
	}
}

func TestVerifierAccepts(t *testing.T) {
	diff := testDiff()
	for _, c := range []struct {
		name string
		diff []byte
		edit func(int, *diffreadtest.ServedPage)
	}{
		{"three pages", diff, nil},
		{"observations that change between pages", diff, func(n int, p *diffreadtest.ServedPage) {
			g := p.Manifest["generation"].(map[string]any)
			g["captured_at"] = "2026-11-29T21:00:0" + string(rune('0'+n)) + "Z"
			g["generated_at"] = g["captured_at"]
			tip := p.Manifest["observations"].(map[string]any)["target_tip"].(map[string]any)
			tip["status"], tip["oid"], tip["observed_at"] = "missing", nil, g["captured_at"]
		}},
		{"owner and name in another case in the manifest", diff, func(_ int, p *diffreadtest.ServedPage) {
			p.Manifest["repository"].(map[string]any)["owner"] = "Team"
		}},
		{"an empty diff", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := serverOptions(c.diff)
			var w bytes.Buffer
			res, err := feed(t, o, c.edit, &w)
			if err != nil {
				t.Fatal(err)
			}
			pages := max(1, (len(c.diff)+99)/100)
			if !bytes.Equal(w.Bytes(), c.diff) || res.Bytes != int64(len(c.diff)) || res.Pages != pages ||
				res.SHA256 != o.Diff.SHA256 || res.Manifest.Content.SHA256 != o.Diff.SHA256 || len(res.Manifest.Raw) == 0 {
				t.Fatalf("%d bytes, result %+v", w.Len(), res)
			}
		})
	}
}

func TestVerifierSequence(t *testing.T) {
	o := serverOptions(testDiff())
	v := diffread.NewVerifier(target, &bytes.Buffer{})
	if _, err := v.Finish(); !isCheck(err, diffread.CheckEOF) {
		t.Fatalf("Finish before any page: %v", err)
	}
	if v.ByteCount() != -1 {
		t.Fatal("a byte count before the first page")
	}
	page := func(off int64) *diffread.Page {
		text, _ := json.Marshal(diffreadtest.NewServedPage(o, off))
		p, err := diffread.DecodePage(text)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, off := range []int64{0, 100, 200} {
		if err := v.Add(page(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Add(page(200)); !isCheck(err, diffread.CheckEOF) {
		t.Fatalf("a page after eof: %v", err)
	}
	if _, err := v.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestVerifierWriteError(t *testing.T) {
	o := serverOptions(testDiff())
	text, _ := json.Marshal(diffreadtest.NewServedPage(o, 0))
	p, _ := diffread.DecodePage(text)
	errFull := errors.New("disk full")
	err := diffread.NewVerifier(target, failingWriter{errFull}).Add(p)
	var ve *diffread.VerificationError
	if !errors.Is(err, errFull) || errors.As(err, &ve) {
		t.Fatalf("a write error came back as %v", err)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

func isCheck(err error, c diffread.Check) bool {
	var ve *diffread.VerificationError
	return errors.As(err, &ve) && ve.Check == c
}

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		in   string
		want diffread.Target
		ok   bool
	}{
		{"demo/gateway#1", diffread.Target{Owner: "demo", Repo: "gateway", Index: 1}, true},
		{"a.b/c_d-e#9223372036854775807", diffread.Target{Owner: "a.b", Repo: "c_d-e", Index: 9223372036854775807}, true},
		{"demo/gateway", diffread.Target{}, false},
		{"demo#1", diffread.Target{}, false},
		{"demo/gateway#0", diffread.Target{}, false},
		{"demo/gateway#-1", diffread.Target{}, false},
		{"demo/gateway#01", diffread.Target{}, false},
		{"demo/gateway#+1", diffread.Target{}, false},
		{"demo/gateway#1x", diffread.Target{}, false},
		{"demo/gateway#9223372036854775808", diffread.Target{}, false},
		{"demo/../x#1", diffread.Target{}, false},
		{"./gateway#1", diffread.Target{}, false},
		{"demo/..#1", diffread.Target{}, false},
		{"de mo/gateway#1", diffread.Target{}, false},
		{"/gateway#1", diffread.Target{}, false},
		{"demo/" + strings.Repeat("x", 101) + "#1", diffread.Target{}, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := diffread.ParseTarget(c.in)
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("ParseTarget(%q) = %+v, %v", c.in, got, err)
			}
			if c.ok && got.String() != c.in {
				t.Fatalf("String() = %q", got.String())
			}
		})
	}
}
