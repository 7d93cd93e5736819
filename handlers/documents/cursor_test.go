package documents

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

func testCursors(t testing.TB, ttl time.Duration) *Cursors {
	t.Helper()
	c, err := NewCursors(bytes.Repeat([]byte{7}, 32), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var sampleClaims = CursorClaims{
	ProjectID: "prj_a", Principal: "grant:grt_a", SourceID: "src_a",
	Commit: strings.Repeat("ab", 20), Path: "docs/a.md", Offset: 65530,
}

func TestCursorRoundTrip(t *testing.T) {
	c := testCursors(t, 0)
	tok := c.Sign(sampleClaims)
	if len(tok) > 300 {
		t.Fatalf("cursor of %d bytes; want compact", len(tok))
	}
	got, err := c.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if !got.boundTo("prj_a", "grant:grt_a", "src_a") || !got.sameVersion(sampleClaims.Commit, "docs/a.md") || got.Offset != 65530 {
		t.Fatalf("claims %+v", got)
	}
	for _, other := range [][3]string{{"prj_b", "grant:grt_a", "src_a"}, {"prj_a", "grant:grt_b", "src_a"}, {"prj_a", "grant:grt_a", "src_b"}} {
		if got.boundTo(other[0], other[1], other[2]) {
			t.Fatalf("bound to %v", other)
		}
	}
	if got.sameVersion(sampleClaims.Commit, "docs/b.md") || got.sameVersion(strings.Repeat("cd", 20), "docs/a.md") {
		t.Fatal("a cursor matches another file version")
	}
	if time.Until(got.Expires) > DefaultCursorTTL || time.Until(got.Expires) < DefaultCursorTTL-time.Minute {
		t.Fatalf("expiry %v is not about 15 minutes ahead", got.Expires)
	}
}

func TestCursorRefusals(t *testing.T) {
	c := testCursors(t, time.Minute)
	tok := c.Sign(sampleClaims)
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	// Every single flipped bit anywhere in the cursor is refused.
	for i := range raw {
		for bit := 0; bit < 8; bit++ {
			m := bytes.Clone(raw)
			m[i] ^= 1 << bit
			if _, err := c.Verify(base64.RawURLEncoding.EncodeToString(m)); err == nil {
				t.Fatalf("flipped bit %d of byte %d accepted", bit, i)
			}
		}
	}
	other, _ := NewCursors(bytes.Repeat([]byte{8}, 32), time.Minute)
	expired := testCursors(t, time.Minute)
	expired.now = func() time.Time { return time.Now().Add(-2 * time.Minute) }
	cases := map[string]string{
		"empty":          "",
		"not base64":     "!!!!",
		"padded":         tok + "=",
		"standard b64":   strings.NewReplacer("-", "+", "_", "/").Replace(tok) + "+",
		"truncated":      tok[:len(tok)-3],
		"other secret":   other.Sign(sampleClaims),
		"expired":        expired.Sign(sampleClaims),
		"over 4096":      strings.Repeat("A", MaxCursorBytes+1),
		"trailing bytes": tok + "AA",
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Verify(bad)
			te, ok := err.(*toolerr.Error)
			if !ok || te.Code != toolerr.CursorInvalid {
				t.Fatalf("err = %v, want cursor_invalid", err)
			}
		})
	}
	if _, err := NewCursors(make([]byte, 31), 0); err == nil {
		t.Fatal("a 31-byte secret was accepted")
	}
}

func FuzzCursorVerify(f *testing.F) {
	c := testCursors(f, time.Hour)
	f.Add(c.Sign(sampleClaims))
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		cl, err := c.Verify(s)
		if err == nil {
			// Only a cursor this signer made verifies: re-signing the
			// claims must give back an equivalent cursor.
			if !cl.boundTo(sampleClaims.ProjectID, sampleClaims.Principal, sampleClaims.SourceID) {
				t.Fatalf("a forged cursor verified: %q → %+v", s, cl)
			}
		}
	})
}
