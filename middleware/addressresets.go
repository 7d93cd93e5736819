package middleware

import (
	"sync"
	"time"
)

// The per-address rapid-reset bounds (AddressResets). The per-connection
// allowance alone let one address reset without limit by opening a new
// connection for every ResetAllowance resets.
const (
	// AddressResetAllowance is how many more HTTP/2 streams the
	// connections of one client key may reset than they complete (net of
	// the leak) before the key is cut off: two connections' allowance, so
	// an honest client abandoning calls on two connections at once is not
	// cut off, while one that opens connection after connection to reset
	// ResetAllowance streams on each is cut off during its third.
	AddressResetAllowance = 2 * ResetAllowance
	// ResetLeakPerSecond is how fast a key's net resets drain, so resets
	// long past are forgotten: a client resetting one stream a second for
	// ever costs the gateway nothing worth refusing.
	ResetLeakPerSecond = 1
	// ResetCutOff is how long a key stays cut off: its new connections
	// are refused and its HTTP/2 streams are not served.
	ResetCutOff = time.Minute
	// maxResetKeys bounds the keys counted at once (about 100 bytes each).
	maxResetKeys = 8192
)

// AddressResets counts, per client key (ClientKey), the HTTP/2 streams
// its connections reset net of those they completed, whichever connection
// carried them, and cuts off a key whose net resets pass the allowance for
// a while. It is shared by ResetGuard, which counts streams, and the
// listener, which refuses a cut-off key's new connections.
//
// Its memory is bounded by maxResetKeys: keys whose count has drained to
// zero are dropped when room is needed (at most once a second), and past
// the bound a new key is not counted (it still meets the per-connection
// allowance and the per-address connection bound) rather than taking the
// place of a key that is counted or cut off.
type AddressResets struct {
	allowance float64
	leak      float64 // per second
	cutFor    time.Duration
	maxKeys   int
	now       func() time.Time

	mu     sync.Mutex
	keys   map[string]*addressLedger
	pruned time.Time
}

// addressLedger is one key's count.
type addressLedger struct {
	net   float64   // resets minus completions, drained by the leak, never below 0
	last  time.Time // when net was last brought up to date
	until time.Time // cut off until then (zero: not cut off)
}

// NewAddressResets returns the per-address count with the gateway's
// figures (AddressResetAllowance, ResetLeakPerSecond, ResetCutOff).
func NewAddressResets() *AddressResets {
	return newAddressResets(AddressResetAllowance, ResetLeakPerSecond, ResetCutOff, maxResetKeys, time.Now)
}

func newAddressResets(allowance int, leak float64, cutOff time.Duration, maxKeys int, now func() time.Time) *AddressResets {
	return &AddressResets{allowance: float64(allowance), leak: leak, cutFor: cutOff, maxKeys: maxKeys, now: now,
		keys: map[string]*addressLedger{}}
}

// Stream counts one stream of key that ended, reset or completed. It
// reports cut when this stream cut the key off (once per cut-off), with
// the net resets that did it. The empty key (no address) is not counted;
// nor are the streams of a key already cut off.
func (a *AddressResets) Stream(key string, reset bool) (cut bool, net int) {
	if key == "" {
		return false, 0
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.keys[key]
	if l == nil {
		if !reset {
			return false, 0 // a completion with nothing to offset is the same as absent
		}
		if l = a.addLocked(key, now); l == nil {
			return false, 0
		}
	}
	if now.Before(l.until) {
		return false, 0
	}
	a.drainLocked(l, now)
	if !reset {
		l.net = max(0, l.net-1)
		return false, 0
	}
	l.net++
	if l.net <= a.allowance {
		return false, 0
	}
	net = int(l.net)
	l.net, l.until = 0, now.Add(a.cutFor)
	return true, net
}

// CutOff reports whether key is cut off now, and for how much longer.
func (a *AddressResets) CutOff(key string) (left time.Duration, cut bool) {
	if key == "" {
		return 0, false
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.keys[key]
	if l == nil || !now.Before(l.until) {
		return 0, false
	}
	return l.until.Sub(now), true
}

// drainLocked brings l's net count up to now.
func (a *AddressResets) drainLocked(l *addressLedger, now time.Time) {
	l.net = max(0, l.net-now.Sub(l.last).Seconds()*a.leak)
	l.last = now
}

// addLocked starts counting key, or returns nil when the bound on keys
// leaves no room.
func (a *AddressResets) addLocked(key string, now time.Time) *addressLedger {
	if len(a.keys) >= a.maxKeys && now.Sub(a.pruned) >= time.Second {
		// At most once a second: a flood of new addresses must not make
		// every stream scan the whole map.
		a.pruned = now
		for k, l := range a.keys {
			if a.drainLocked(l, now); l.net == 0 && !now.Before(l.until) {
				delete(a.keys, k)
			}
		}
	}
	if len(a.keys) >= a.maxKeys {
		return nil
	}
	l := &addressLedger{last: now}
	a.keys[key] = l
	return l
}
