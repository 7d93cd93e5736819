package forgejotools

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

func sampleCursor() DiffCursor {
	return newDiffCursor("team", "project", evidence.Identity{
		RepositoryID: 42, PullRequestID: 1001, Index: 7, Owner: "team", Name: "project",
		ObjectFormat: "sha1", BaseRepositoryID: 42, BaseOID: strings.Repeat("ab", 20), BaseSource: evidence.BaseSource,
		HeadRepositoryID: 42, HeadOID: strings.Repeat("cd", 20), HeadRef: "refs/pull/7/head",
		Profile: evidence.Profile, ByteCount: 100000, SHA256: strings.Repeat("0f", 32),
	}, 17342)
}

func wantCode(t *testing.T, err error, code toolerr.Code) {
	t.Helper()
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := sampleCursor()
	s := c.Encode()
	if !strings.HasPrefix(s, cursorPrefix) || len(s) > 1024 || strings.ContainsAny(s, "+/=") {
		t.Fatalf("cursor %q (%d bytes)", s, len(s))
	}
	got, err := DecodeDiffCursor(s)
	if err != nil || got != c {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	// The longest names and sha256 OIDs still leave it far below the bound.
	c.Owner, c.Repo = strings.Repeat("o", 100), strings.Repeat("r", 100)
	c.ObjectFormat, c.Base.OID, c.Head.OID = "sha256", strings.Repeat("a", 64), strings.Repeat("b", 64)
	c.ByteCount, c.Offset = 1<<62, 1<<61
	if n := len(c.Encode()); n > 1024 {
		t.Fatalf("a largest cursor has %d bytes", n)
	}
	if _, err := DecodeDiffCursor(c.Encode()); err != nil {
		t.Fatal(err)
	}
}

// TestCursorFlippedByte: changing any byte of a cursor is cursor_invalid,
// never a different cursor.
func TestCursorFlippedByte(t *testing.T) {
	s := sampleCursor().Encode()
	for i := range len(s) {
		for _, bit := range []byte{1, 2, 4, 32} {
			b := []byte(s)
			b[i] ^= bit
			_, err := DecodeDiffCursor(string(b))
			wantCode(t, err, toolerr.CursorInvalid)
		}
	}
}

func TestCursorRefusals(t *testing.T) {
	good := sampleCursor()
	reencode := func(change func(*DiffCursor)) string {
		c := good
		change(&c)
		return c.Encode()
	}
	valid := good.Encode()
	payload, sum, _ := strings.Cut(strings.TrimPrefix(valid, cursorPrefix), ".")
	for name, s := range map[string]string{
		"empty":             "",
		"too long":          valid + strings.Repeat("A", MaxCursorBytes),
		"other version":     "prdiff2." + payload + "." + sum,
		"no checksum":       cursorPrefix + payload,
		"padded":            valid + "==",
		"std alphabet":      strings.NewReplacer("-", "+", "_", "/").Replace(valid) + "+",
		"extra dot":         valid + ".x",
		"offset zero":       reencode(func(c *DiffCursor) { c.Offset = 0 }),
		"offset at end":     reencode(func(c *DiffCursor) { c.Offset = c.ByteCount }),
		"offset beyond":     reencode(func(c *DiffCursor) { c.Offset = c.ByteCount + 1 }),
		"bad owner":         reencode(func(c *DiffCursor) { c.Owner = "a/b" }),
		"zero index":        reencode(func(c *DiffCursor) { c.Index = 0 }),
		"negative id":       reencode(func(c *DiffCursor) { c.RepositoryID = -1 }),
		"short oid":         reencode(func(c *DiffCursor) { c.Head.OID = "abc" }),
		"sha256 oid":        reencode(func(c *DiffCursor) { c.Head.OID = strings.Repeat("a", 64) }),
		"upper-case oid":    reencode(func(c *DiffCursor) { c.Base.OID = strings.ToUpper(c.Base.OID) }),
		"format":            reencode(func(c *DiffCursor) { c.ObjectFormat = "md5" }),
		"ref of other pull": reencode(func(c *DiffCursor) { c.Head.Ref = "refs/pull/8/head" }),
		"branch ref":        reencode(func(c *DiffCursor) { c.Head.Ref = "refs/heads/main" }),
		"source":            reencode(func(c *DiffCursor) { c.Base.Source = "branch" }),
		"profile":           reencode(func(c *DiffCursor) { c.Profile = "git-diff.v2" }),
		"sha256":            reencode(func(c *DiffCursor) { c.SHA256 = "x" }),
		"valid checksum of other JSON": func() string {
			p := []byte(`{"owner":"team","repo":"project","index":7,"extra":1}`)
			return cursorPrefix + b64(p) + "." + b64(cursorChecksum(p))
		}(),
		"valid checksum of respaced JSON": func() string {
			c := good
			c.Owner = "team"
			p := []byte(strings.Replace(string(mustJSON(c)), `"owner":"team"`, `"owner": "team"`, 1))
			return cursorPrefix + b64(p) + "." + b64(cursorChecksum(p))
		}(),
		"valid checksum of repeated member": func() string {
			p := []byte(strings.Replace(string(mustJSON(good)), `{"owner":"team"`, `{"owner":"x","owner":"team"`, 1))
			return cursorPrefix + b64(p) + "." + b64(cursorChecksum(p))
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeDiffCursor(s)
			wantCode(t, err, toolerr.CursorInvalid)
		})
	}
}

func TestCursorMatchesAndSameDiff(t *testing.T) {
	c := sampleCursor()
	if !c.matches("TEAM", "Project", 7) || c.matches("team", "project", 8) || c.matches("team", "other", 7) || c.matches("other", "project", 7) {
		t.Fatal("matches")
	}
	id := evidence.Identity{
		RepositoryID: 42, PullRequestID: 1001, Index: 7, Owner: "Team", Name: "Project",
		ObjectFormat: "sha1", BaseRepositoryID: 42, BaseOID: c.Base.OID, BaseSource: evidence.BaseSource,
		HeadRepositoryID: 42, HeadOID: c.Head.OID, HeadRef: "refs/pull/7/head",
		Profile: evidence.Profile, ByteCount: c.ByteCount, SHA256: c.SHA256,
	}
	if !c.sameDiff(id) {
		t.Fatal("the same diff is stale")
	}
	for name, change := range map[string]func(*evidence.Identity){
		"repository id": func(i *evidence.Identity) { i.RepositoryID++ },
		"pull id":       func(i *evidence.Identity) { i.PullRequestID++ },
		"base oid":      func(i *evidence.Identity) { i.BaseOID = strings.Repeat("ee", 20) },
		"head oid":      func(i *evidence.Identity) { i.HeadOID = strings.Repeat("ee", 20) },
		"byte count":    func(i *evidence.Identity) { i.ByteCount++ },
		"sha256":        func(i *evidence.Identity) { i.SHA256 = strings.Repeat("1f", 32) },
		"object format": func(i *evidence.Identity) { i.ObjectFormat = "sha256" },
	} {
		i := id
		change(&i)
		if c.sameDiff(i) {
			t.Errorf("%s changed, but the cursor still matches", name)
		}
	}
}

// cursorSeeds are the committed corpus of FuzzDecodeDiffCursor
// (testdata/fuzz/FuzzDecodeDiffCursor); go test -run TestCursorFuzzSeeds
// -update-cursor-seeds rewrites it.
func cursorSeeds() map[string]string {
	c := sampleCursor()
	big := c
	big.ObjectFormat, big.Base.OID, big.Head.OID = "sha256", strings.Repeat("a", 64), strings.Repeat("b", 64)
	s := c.Encode()
	return map[string]string{
		"valid":        s,
		"valid-sha256": big.Encode(),
		"flipped":      s[:20] + "A" + s[21:],
		"truncated":    s[:len(s)-3],
		"no-prefix":    strings.TrimPrefix(s, cursorPrefix),
		"empty":        "",
	}
}

func TestCursorFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeDiffCursor")
	for name, s := range cursorSeeds() {
		file := filepath.Join(dir, name)
		content := fmt.Sprintf("go test fuzz v1\nstring(%q)\n", s)
		if os.Getenv("UPDATE_FUZZ_SEEDS") != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := os.ReadFile(file); err != nil || string(got) != content {
			t.Errorf("seed %s is missing or stale (run UPDATE_FUZZ_SEEDS=1 go test -run TestCursorFuzzSeeds)", name)
		}
	}
}

// FuzzDecodeDiffCursor: any input is either refused as cursor_invalid or
// is exactly the encoding of a cursor that passes every check.
func FuzzDecodeDiffCursor(f *testing.F) {
	for _, s := range cursorSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeDiffCursor(s)
		if err != nil {
			var te *toolerr.Error
			if !errors.As(err, &te) || te.Code != toolerr.CursorInvalid || c != (DiffCursor{}) {
				t.Fatalf("refusal %v with cursor %+v", err, c)
			}
			return
		}
		if c.Encode() != s || c.check() != "" {
			t.Fatalf("accepted %q, which is not the encoding of %+v", s, c)
		}
	})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
