package forgejotools

import (
	"fmt"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// TestVerifiedVolume: with a budget, a caller whose verified bytes this
// minute reached it is refused with rate_limited and retry_after_seconds
// until the next minute, other callers are not; without one nothing is
// refused; Top reports the last complete minute's heaviest callers, at
// most VolumeTopN; the callers tracked are bounded.
func TestVerifiedVolume(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 10, 0, time.UTC)
	clock := func() time.Time { return now }

	t.Run("budget", func(t *testing.T) {
		v := NewVerifiedVolume(1000)
		v.now = clock
		if err := v.Admit("a"); err != nil {
			t.Fatal(err)
		}
		v.Spend("a", 999)
		if err := v.Admit("a"); err != nil {
			t.Fatalf("under the budget: %v", err)
		}
		v.Spend("a", 5000) // one call may overshoot
		err := v.Admit("a")
		te := toolerr.As(err)
		if err == nil || te.Code != toolerr.RateLimited || te.Details["retry_after_seconds"] != int64(51) {
			t.Fatalf("spent: %v %v, want rate_limited retrying in 51 s", err, te.Details)
		}
		if err := v.Admit("b"); err != nil {
			t.Fatalf("another caller: %v", err)
		}
		now = now.Add(time.Minute)
		if err := v.Admit("a"); err != nil {
			t.Fatalf("the next minute: %v", err)
		}
	})
	t.Run("off", func(t *testing.T) {
		v := NewVerifiedVolume(0)
		v.now = clock
		v.Spend("a", 1<<40)
		if err := v.Admit("a"); err != nil {
			t.Fatal(err)
		}
		var none *VerifiedVolume
		none.Spend("a", 1)
		if none.Admit("a") != nil || none.Top() != nil {
			t.Fatal("a nil account refused or reported")
		}
	})
	t.Run("top", func(t *testing.T) {
		v := NewVerifiedVolume(0)
		v.now = clock
		for i := range 30 {
			v.Spend(fmt.Sprintf("c%02d", i), int64(i+1)*100)
		}
		if top := v.Top(); len(top) != 0 {
			t.Fatalf("the current minute reported before it ended: %v", top)
		}
		now = now.Add(time.Minute)
		top := v.Top()
		if len(top) != VolumeTopN || top[0] != (CallerBytes{"c29", 3000}) || top[VolumeTopN-1].Caller != "c20" {
			t.Fatalf("top %v", top)
		}
		now = now.Add(2 * time.Minute)
		if top := v.Top(); len(top) != 0 {
			t.Fatalf("an idle minute still reports %v", top)
		}
	})
	t.Run("bounded callers", func(t *testing.T) {
		v := NewVerifiedVolume(10)
		v.now = clock
		for i := range maxVolumeKeys + 100 {
			v.Spend(fmt.Sprint(i), 1)
		}
		if n := len(v.current); n > maxVolumeKeys+1 {
			t.Fatalf("%d callers tracked, want at most %d", n, maxVolumeKeys+1)
		}
		if v.current[overflowCaller] != 100 {
			t.Fatalf("overflow account %d, want the 100 callers past the bound", v.current[overflowCaller])
		}
	})
}
