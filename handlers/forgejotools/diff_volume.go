package forgejotools

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// VolumeTopN is how many callers VerifiedVolume.Top reports: the metric of
// bytes pulled per caller has at most this many series, whatever the
// number of callers.
const VolumeTopN = 10

// maxVolumeKeys bounds the callers one window tracks; past it, callers not
// yet seen in the window share one account (they are then limited
// together, which only a flood of distinct principals can cause).
const maxVolumeKeys = 65536

// overflowCaller is the shared account past maxVolumeKeys.
const overflowCaller = "overflow"

// VerifiedVolume accounts the diff bytes each caller (the hashed caller
// key of the access log) had verified, per minute. Every diff page pulls
// and verifies the whole diff (docs/architecture.md#streaming-and-memory:
// no total cap), so reading a 25 MB diff page by page pulls about 32 GB;
// with a budget set (ratelimit.verified_bytes_per_minute, off by default)
// a caller that has had that many bytes verified in the current minute is
// refused with rate_limited until the next one. The check is made before
// the evidence is read, so one call may overshoot by one diff. Each
// replica keeps its own account. A nil *VerifiedVolume counts nothing.
type VerifiedVolume struct {
	perMinute int64 // 0: count, never refuse
	now       func() time.Time

	mu      sync.Mutex
	start   time.Time // of the current one-minute window
	current map[string]int64
	last    map[string]int64 // the previous, complete window
}

// NewVerifiedVolume returns the account; perMinute 0 only counts.
func NewVerifiedVolume(perMinute int64) *VerifiedVolume {
	return &VerifiedVolume{perMinute: perMinute, now: time.Now, current: map[string]int64{}, last: map[string]int64{}}
}

// rollLocked starts a new window when the current one is over.
func (v *VerifiedVolume) rollLocked(now time.Time) {
	if v.start.IsZero() {
		v.start = now.Truncate(time.Minute)
	}
	for now.Sub(v.start) >= time.Minute {
		if now.Sub(v.start) >= 2*time.Minute {
			v.last = map[string]int64{}
		} else {
			v.last = v.current
		}
		v.current = map[string]int64{}
		v.start = now.Truncate(time.Minute)
	}
}

// Admit refuses a caller whose budget for this minute is spent.
func (v *VerifiedVolume) Admit(caller string) error {
	if v == nil || v.perMinute <= 0 {
		return nil
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.rollLocked(now)
	if v.current[v.keyLocked(caller)] < v.perMinute {
		return nil
	}
	retry := int64(v.start.Add(time.Minute).Sub(now).Seconds()) + 1
	return toolerr.New(toolerr.RateLimited, "this caller had %d diff bytes verified this minute, its budget (ratelimit.verified_bytes_per_minute); retry after %d seconds", v.perMinute, retry).
		With("retry_after_seconds", retry)
}

// keyLocked is caller's account key: caller, or the shared overflow
// account when the window tracks maxVolumeKeys callers already.
func (v *VerifiedVolume) keyLocked(caller string) string {
	if _, ok := v.current[caller]; ok || len(v.current) < maxVolumeKeys {
		return caller
	}
	return overflowCaller
}

// Spend counts n bytes verified for caller.
func (v *VerifiedVolume) Spend(caller string, n int64) {
	if v == nil || n <= 0 {
		return
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.rollLocked(now)
	v.current[v.keyLocked(caller)] += n
}

// CallerBytes is one caller's verified bytes in a window.
type CallerBytes struct {
	Caller string
	Bytes  int64
}

// Top is the VolumeTopN callers with the most bytes verified in the last
// complete minute, most first: what the per-caller metric exports, so its
// series stay bounded however many callers there are.
func (v *VerifiedVolume) Top() []CallerBytes {
	if v == nil {
		return nil
	}
	now := v.now()
	v.mu.Lock()
	v.rollLocked(now)
	out := make([]CallerBytes, 0, len(v.last))
	for c, n := range v.last {
		out = append(out, CallerBytes{c, n})
	}
	v.mu.Unlock()
	slices.SortFunc(out, func(a, b CallerBytes) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Caller, b.Caller))
	})
	return out[:min(len(out), VolumeTopN)]
}
