package evidence_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

var update = flag.Bool("update", false, "rewrite golden files and the committed fuzz seed corpus")

func TestVerifyIdentity(t *testing.T) {
	diff := []byte("diff --git a/x b/x\n")
	v, err := evidence.Verify(bytes.NewReader(et.Bytes(et.Sample(), diff)), req7(0, 100))
	wantWindow(t, v, err, diff, req7(0, 100))
	sum := sha256.Sum256(diff)
	want := evidence.Identity{
		RepositoryID: 42, PullRequestID: 1001, Index: 7, Owner: "team", Name: "project",
		ObjectFormat:     "sha1",
		BaseRepositoryID: 42, BaseOID: "6b26cfedad09a0b41a4e2c1f3d5b7a9c0e8f6d4b", BaseSource: evidence.BaseSource,
		HeadRepositoryID: 42, HeadOID: "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f60718293", HeadRef: "refs/pull/7/head",
		Profile:   evidence.Profile,
		ByteCount: int64(len(diff)), SHA256: hex.EncodeToString(sum[:]),
	}
	if v.Identity != want {
		t.Fatalf("identity\n got %+v\nwant %+v", v.Identity, want)
	}
}

// TestManifest pins the manifest: the canonical entity without "data",
// byte for byte, whatever order and spacing the members came in.
func TestManifest(t *testing.T) {
	diff := randomDiff(1000, 1)
	canonical := et.Bytes(et.Sample(), diff)
	golden := filepath.Join("testdata", "manifest.golden.json")
	for _, tc := range []struct {
		name string
		opts []et.Option
	}{
		{"canonical", nil},
		{"data first", []et.Option{et.DataFirst()}},
		{"spaced", []et.Option{et.Spaced(), et.Trailing("\n")}},
		{"data first spaced", []et.Option{et.DataFirst(), et.Spaced()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := evidence.Verify(bytes.NewReader(et.Bytes(et.Sample(), diff, tc.opts...)), req7(0, 1))
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(canonical, []byte(`,"data":"`))
			want := append(bytes.Clone(canonical[:i]), '}')
			if !bytes.Equal(v.Manifest, want) {
				t.Fatalf("manifest\n got %s\nwant %s", v.Manifest, want)
			}
			if !json.Valid(v.Manifest) {
				t.Fatal("manifest is not valid JSON")
			}
			if *update && tc.opts == nil {
				var pretty bytes.Buffer
				json.Indent(&pretty, v.Manifest, "", "  ")
				os.WriteFile(golden, append(pretty.Bytes(), '\n'), 0o644)
			}
			g, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			json.Compact(&compact, g)
			if !bytes.Equal(compact.Bytes(), v.Manifest) {
				t.Fatalf("manifest differs from %s (run with -update after a deliberate change)", golden)
			}
		})
	}
}

// TestManifestKeepsValuesAsReceived: escapes stay in the manifest, the
// identity holds the unescaped text.
func TestManifestKeepsValuesAsReceived(t *testing.T) {
	b := et.Bytes(et.Sample(), nil, et.Override("repository.owner", `"te\u0061m\/x"`))
	v, err := evidence.Verify(bytes.NewReader(b), req7(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if v.Identity.Owner != "team/x" {
		t.Fatalf("owner %q", v.Identity.Owner)
	}
	if !bytes.Contains(v.Manifest, []byte(`"owner":"te\u0061m\/x"`)) {
		t.Fatalf("manifest %s", v.Manifest)
	}
}

func TestVerifyValidVariants(t *testing.T) {
	nonUTF8 := []byte{0xff, 0xfe, 'r', 0xe9, 's', 'u', 'm', 0xe9}
	sha256OID := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		edit func(*et.Entity)
		opts []et.Option
	}{
		{name: "canonical"},
		{name: "empty labels", edit: func(e *et.Entity) { e.TargetBranch, e.ForkBranch = nil, []byte{} }},
		{name: "non-UTF-8 labels", edit: func(e *et.Entity) { e.TargetBranch, e.ForkBranch = nonUTF8, nonUTF8[:5] }},
		{name: "deleted fork", edit: func(e *et.Entity) { e.ForkRepositoryID = 0 }},
		{name: "target tip missing", edit: func(e *et.Entity) { e.TargetOID = "" }},
		{name: "sha256 object format", edit: func(e *et.Entity) {
			e.ObjectFormat, e.BaseOID, e.HeadOID, e.TargetOID = "sha256", sha256OID, sha256OID, sha256OID
		}},
		{name: "largest IDs", opts: []et.Option{
			et.Override("repository.id", "9223372036854775807"),
			et.Override("generation.base.repository_id", "9223372036854775807"),
			et.Override("generation.head.repository_id", "9223372036854775807"),
			et.Override("pull_request.id", "9223372036854775807"),
		}},
		{name: "fractional timestamp with offset", opts: []et.Option{et.Override("generation.captured_at", `"2026-11-29T22:00:00.123456+01:00"`)}},
		{name: "escaped member name", opts: []et.Option{et.Override("repository", `{"\u0069d":42,"owner":"team","name":"project"}`)}},
		{name: "data first", opts: []et.Option{et.DataFirst()}},
		{name: "spaced", opts: []et.Option{et.Spaced()}},
		{name: "trailing whitespace", opts: []et.Option{et.Trailing(" \t\r\n\n")}},
	} {
		for _, size := range []int{0, 1, 2, 3, 100} {
			e := et.Sample()
			if tc.edit != nil {
				tc.edit(&e)
			}
			diff := randomDiff(size, uint64(size))
			req := req7(0, 64)
			v, err := evidence.Verify(bytes.NewReader(et.Bytes(e, diff, tc.opts...)), req)
			t.Run(tc.name, func(t *testing.T) { wantWindow(t, v, err, diff, req) })
		}
	}
}

func TestVerifyLeadingWhitespace(t *testing.T) {
	b := append([]byte(" \n\t"), et.Bytes(et.Sample(), []byte("x"))...)
	v, err := evidence.Verify(bytes.NewReader(b), req7(0, 1))
	wantWindow(t, v, err, []byte("x"), req7(0, 1))
}

func TestVerifyEmptyDiff(t *testing.T) {
	v, err := evidence.Verify(bytes.NewReader(et.Bytes(et.Sample(), nil)), req7(0, evidence.MaxWindow))
	wantWindow(t, v, err, nil, req7(0, evidence.MaxWindow))
	if len(v.Window) != 0 || v.Identity.ByteCount != 0 {
		t.Fatalf("empty diff: window %d bytes of %d", len(v.Window), v.Identity.ByteCount)
	}
}

func TestVerifyOffsetBeyondEnd(t *testing.T) {
	diff := []byte("0123456789")
	for _, off := range []int64{11, 12, 1 << 40} {
		v, err := evidence.Verify(bytes.NewReader(et.Bytes(et.Sample(), diff)), req7(off, 4))
		wantRefusal(t, v, err, toolerr.CursorStale, "beyond the end")
		if !errors.Is(err, evidence.ErrOffsetBeyondEnd) {
			t.Fatalf("offset %d: %v does not wrap ErrOffsetBeyondEnd", off, err)
		}
	}
	v, err := evidence.Verify(bytes.NewReader(et.Bytes(et.Sample(), diff)), req7(10, 4))
	wantWindow(t, v, err, diff, req7(10, 4))
}

func TestVerifyRequestBounds(t *testing.T) {
	entity := et.Bytes(et.Sample(), []byte("x"))
	for _, req := range []evidence.Request{
		{Index: 0, Window: 1},
		{Index: -7, Window: 1},
		{Index: 7, Offset: -1, Window: 1},
		{Index: 7, Window: 0},
		{Index: 7, Window: evidence.MaxWindow + 1},
	} {
		v, err := evidence.Verify(bytes.NewReader(entity), req)
		wantRefusal(t, v, err, toolerr.InvalidArguments, "out of range")
	}
}

type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

type stalledReader struct{}

func (stalledReader) Read([]byte) (int, error) { return 0, nil }

func TestVerifyReadErrors(t *testing.T) {
	entity := et.Bytes(et.Sample(), randomDiff(50000, 3))
	cause := errors.New("connection reset")
	framing := toolerr.New(toolerr.EvidenceFraming, "body longer than Content-Length")
	for _, cut := range []int{0, 10, 1500, 40000, len(entity) - 1, len(entity)} {
		r := func(err error) io.Reader { return &failingReader{r: bytes.NewReader(entity[:cut]), err: err} }

		v, err := evidence.Verify(r(cause), req7(0, 10))
		wantRefusal(t, v, err, toolerr.UpstreamUnavailable, "reading the evidence entity failed")
		if !errors.Is(err, cause) {
			t.Fatalf("cut %d: cause lost: %v", cut, err)
		}
		v, err = evidence.Verify(r(framing), req7(0, 10))
		wantRefusal(t, v, err, toolerr.EvidenceFraming, "Content-Length")

		if cut < len(entity) {
			v, err = evidence.Verify(r(io.ErrUnexpectedEOF), req7(0, 10))
			wantRefusal(t, v, err, toolerr.EvidenceMalformed, "truncated entity")
		}
	}
	v, err := evidence.Verify(stalledReader{}, req7(0, 10))
	wantRefusal(t, v, err, toolerr.UpstreamUnavailable, "reading")
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("stalled reader: %v", err)
	}
	// A reader that returns its last bytes together with io.EOF.
	diff := randomDiff(20000, 4)
	v, err = evidence.Verify(iotest.DataErrReader(bytes.NewReader(et.Bytes(et.Sample(), diff))), req7(19990, 100))
	wantWindow(t, v, err, diff, req7(19990, 100))
}
