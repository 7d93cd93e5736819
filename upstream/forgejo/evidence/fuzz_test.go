package evidence_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// fuzzSeeds are the writer's valid and faulty outputs the committed corpus
// (testdata/fuzz/FuzzVerify) is made of; go test -run TestFuzzSeeds -update
// rewrites it.
func fuzzSeeds() map[string][]byte {
	diff := []byte("diff --git a/f b/f\n+???>\n\xff\xfe binary\n")
	sha256OID := strings.Repeat("ab", 32)
	seeds := map[string][]byte{}
	add := func(name string, e et.Entity, d []byte, opts ...et.Option) {
		seeds[name] = et.Bytes(e, d, opts...)
	}
	s := et.Sample()
	add("valid-canonical", s, diff)
	add("valid-empty", s, nil)
	add("valid-data-first", s, diff, et.DataFirst())
	add("valid-spaced", s, diff, et.Spaced(), et.Trailing("\n"))
	add("valid-escaped-owner", s, diff, et.Override("repository.owner", `"te\u0061m"`))
	e := s
	e.ObjectFormat, e.BaseOID, e.HeadOID, e.TargetOID = "sha256", sha256OID, sha256OID, ""
	e.ForkRepositoryID = 0
	add("valid-sha256-missing-tip-deleted-fork", e, diff)

	add("dup-content", s, diff, et.Duplicate("content"))
	add("dup-nested", s, diff, et.Duplicate("generation.head.oid"))
	add("dup-data", s, diff, et.DataFirst(), et.Duplicate("data"))
	add("unknown-top", s, diff, et.Extra(""))
	add("unknown-nested", s, diff, et.Extra("observations.original_fork"))
	add("missing-data", s, diff, et.Remove("data"))
	add("truncated-closure", s, diff, et.TruncateBy(1))
	add("truncated-data", s, diff, et.DataFirst(), et.TruncateTo(30))
	add("trailing", s, diff, et.Trailing("x"))
	add("wrong-sha256", s, diff, et.WrongSHA256())
	add("wrong-count", s, diff, et.WrongByteCount())
	add("late-corruption", s, diff, et.CorruptByteAt(int64(len(diff)-1)))
	add("invalid-char", s, diff, et.InvalidCharAt(20))
	add("escaped-char", s, diff, et.EscapedCharAt(3))
	add("pad-bits", s, diff, et.NonZeroPadBits())
	add("bad-padding", s, diff, et.BadPadding())
	add("url-alphabet", s, diff, et.URLAlphabet())
	add("id-string", s, diff, et.Override("repository.id", `"42"`))
	add("id-exponent", s, diff, et.Override("pull_request.id", `1e3`))
	add("label-noncanonical", s, diff, et.Override("observations.target_tip.branch_b64", `"bWFpbh=="`))
	e = s
	e.Index = 8
	add("wrong-index", e, diff)
	e = s
	e.HeadRef = "refs/heads/main"
	add("wrong-ref", e, diff)
	e = s
	e.BaseRepositoryID = 43
	add("moved-base", e, diff)
	e = s
	e.ObjectFormat = "sha256"
	add("wrong-object-format", e, diff)
	return seeds
}

func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzVerify")
	for name, b := range fuzzSeeds() {
		file := filepath.Join(dir, name)
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\nuint16(%d)\n", b, 3, 100)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(file)
		if err != nil || string(got) != content {
			t.Errorf("seed %s is missing or stale (run go test -run TestFuzzSeeds -update)", name)
		}
	}
}

// FuzzVerify checks Verify against encoding/json and the standard base64
// decoder: whatever it accepts must be valid JSON whose data is canonical
// base64 of exactly the counted, hashed bytes, and the window must be those
// bytes; a one-byte-at-a-time read must agree; a refusal is a known code
// and publishes nothing.
func FuzzVerify(f *testing.F) {
	for _, b := range fuzzSeeds() {
		f.Add(b, uint16(0), uint16(64))
	}
	f.Fuzz(func(t *testing.T, entity []byte, off, window uint16) {
		req := evidence.Request{Index: 7, Offset: int64(off), Window: int(window%evidence.MaxWindow) + 1}
		v, err := evidence.Verify(bytes.NewReader(entity), req)
		v1, err1 := evidence.Verify(iotest.OneByteReader(bytes.NewReader(entity)), req)
		if (err == nil) != (err1 == nil) {
			t.Fatalf("whole read: %v; one byte at a time: %v", err, err1)
		}
		if err != nil {
			var te *toolerr.Error
			if v != nil || !errors.As(err, &te) {
				t.Fatalf("refusal %v with result %v", err, v)
			}
			switch te.Code {
			case toolerr.EvidenceMalformed, toolerr.EvidenceMetadataTooLarge:
			case toolerr.CursorStale:
				if !errors.Is(err, evidence.ErrOffsetBeyondEnd) {
					t.Fatalf("cursor_stale without ErrOffsetBeyondEnd: %v", err)
				}
			default:
				t.Fatalf("unexpected code %s: %v", te.Code, err)
			}
			// The code is the contract and must not depend on how reads
			// split the entity. The message may: a bad padding run is
			// named by whichever check sees it first (the committed corpus
			// entry b50f96b20cce9856 is such a case).
			if te.Code != toolerr.As(err1).Code {
				t.Fatalf("split reads disagree: %v / %v", err, err1)
			}
			return
		}
		if !bytes.Equal(v.Window, v1.Window) || !bytes.Equal(v.Manifest, v1.Manifest) || v.Identity != v1.Identity {
			t.Fatal("split reads disagree on the result")
		}
		if !json.Valid(entity) || !json.Valid(v.Manifest) {
			t.Fatal("accepted invalid JSON")
		}
		var doc struct{ Data string }
		if err := json.Unmarshal(entity, &doc); err != nil {
			t.Fatal(err)
		}
		diff, err := base64.StdEncoding.Strict().DecodeString(doc.Data)
		if err != nil || base64.StdEncoding.EncodeToString(diff) != doc.Data {
			t.Fatalf("accepted non-canonical base64 (%v)", err)
		}
		sum := sha256.Sum256(diff)
		if int64(len(diff)) != v.Identity.ByteCount || hex.EncodeToString(sum[:]) != v.Identity.SHA256 {
			t.Fatal("count or hash differ from the data")
		}
		end := min(req.Offset+int64(req.Window), int64(len(diff)))
		if !bytes.Equal(v.Window, diff[req.Offset:end]) {
			t.Fatal("window differs from the data")
		}
	})
}
