package e2e

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// TestDiffVerifiedBytesBudget: with
// ratelimit.verified_bytes_per_minute set, a caller whose verified diff
// bytes this minute reached the budget is refused with rate_limited and
// retry_after_seconds before the evidence is read again; another caller is
// still served. Off (the default) nothing is refused (every other diff
// test).
func TestDiffVerifiedBytesBudget(t *testing.T) {
	const budget = 120000 // two pages of a 50,000-byte diff, not three
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_VERIFIED_BYTES_PER_MINUTE": "120000"})
	d := st.demo
	diff := bytes.Repeat([]byte("+line of a diff read again and again\n"), 2000)[:50000]
	if err := st.emu.SetSyntheticDiff(d.Owner, d.PublicRepo, d.OpenPull, func() io.Reader { return bytes.NewReader(diff) }); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull}
	s, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
	// The gateway's windows are calendar minutes (VerifiedVolume): calls
	// that crossed into the next one would start a fresh budget, so they
	// start with at least minuteLeft of this minute to go.
	const minuteLeft = 30 * time.Second
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < minuteLeft {
		time.Sleep(left)
	}
	minute := time.Now().Truncate(time.Minute)
	pulled := 0
	for pulled < budget {
		if p, out := callDiff(t, s, args); p == nil {
			t.Fatalf("after %d bytes, under the budget of %d: %v", pulled, budget, out)
		}
		pulled += len(diff)
	}
	before := diffReads(st)
	p, out := callDiff(t, s, args)
	if now := time.Now().Truncate(time.Minute); !now.Equal(minute) {
		t.Fatalf("the calls took from minute %s into %s, over %s: the budget was renewed between them", minute.Format("15:04"), now.Format("15:04"), minuteLeft)
	}
	wantDiffError(t, p, out, "rate_limited")
	e := out["error"].(map[string]any)
	if e["retry_after_seconds"] == nil || !strings.Contains(e["message"].(string), "ratelimit.verified_bytes_per_minute") {
		t.Fatalf("refusal %v", e)
	}
	if diffReads(st) != before {
		t.Fatal("the refused call still read the evidence")
	}
	// Another principal has its own budget.
	other, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.BotToken)
	if p, out := callDiff(t, other, args); p == nil {
		t.Fatalf("another caller: %v", out)
	}
}

// diffReads counts the evidence requests the emulator received.
func diffReads(st *forgejoStack) int {
	n := 0
	for _, r := range st.emu.Requests() {
		if strings.HasSuffix(r.Path, ".diff") {
			n++
		}
	}
	return n
}
