package documents

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/fuzzseed"
)

// cursorSeeds are the committed corpus of FuzzCursorVerify: cursors made
// by the test signer at fixed times (one valid until 2099, the rest
// expired) and the hostile shapes of the hostile-caller tests.
func cursorSeeds(t testing.TB) []fuzzseed.Seed {
	signAt := func(at time.Time, cl CursorClaims) string {
		c := testCursors(t, time.Hour)
		c.now = func() time.Time { return at }
		return c.Sign(cl)
	}
	valid := signAt(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), sampleClaims)
	expired := signAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), sampleClaims)
	other := sampleClaims
	other.ProjectID = "prj_b"
	otherExpired := signAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), other)
	raw, _ := base64.RawURLEncoding.DecodeString(valid)
	version2 := append([]byte{2}, raw[1:]...)
	seeds := map[string]string{
		"valid-until-2099":            valid,
		"expired":                     expired,
		"another-project-expired":     otherExpired,
		"flipped":                     valid[:10] + string(valid[10]^1) + valid[11:],
		"truncated":                   valid[:len(valid)-4],
		"padded":                      valid + "==",
		"standard-alphabet":           strings.NewReplacer("-", "+", "_", "/").Replace(valid),
		"version-2":                   base64.RawURLEncoding.EncodeToString(version2),
		"over-4096-bytes":             strings.Repeat("A", MaxCursorBytes+1),
		"empty":                       "",
		"spliced-halves":              valid[len(valid)/2:] + valid[:len(valid)/2],
		"another-gateway-secret-like": base64.RawURLEncoding.EncodeToString(append([]byte{1}, []byte(`{"p":"prj_a","u":"grant:grt_a","s":"src_a","c":"x","h":"y","o":1,"e":4102444800}`+strings.Repeat("\x00", 32))...)),
	}
	var out []fuzzseed.Seed
	for name, s := range seeds {
		out = append(out, fuzzseed.Seed{Name: name, Values: []any{s}})
	}
	return out
}

func TestCursorFuzzSeeds(t *testing.T) { fuzzseed.Sync(t, "FuzzCursorVerify", cursorSeeds(t)) }
