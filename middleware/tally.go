package middleware

import "sync"

// tally counts units of one resource held at once (requests in flight,
// buffered body bytes), in all and per client IP, against two bounds. It
// is the bookkeeping shared by InFlight and BodyBudget. "Per client IP"
// is per RequestClientKey: an IPv6 client by its prefix.
//
// Under pressure (past pressureNum/pressureDen of the total bound) the
// per-IP share shrinks to a fair share: the total divided among the keys
// holding something now, the asking key included. A key past its fair
// share is refused before anyone else, so the keys holding the most are
// refused first, however many keys the holders spread over.
type tally struct {
	max, maxPerIP int64
	mu            sync.Mutex
	total         int64
	perIP         map[string]int64
}

// The share of the total bound past which only keys within their fair
// share are served: three quarters.
const pressureNum, pressureDen = 3, 4

func newTally(max, maxPerIP int64) *tally {
	if max <= 0 || maxPerIP <= 0 {
		panic("middleware: a bound must be positive")
	}
	return &tally{max: max, maxPerIP: maxPerIP, perIP: map[string]int64{}}
}

// Bound names which bound refused an acquisition.
type Bound int

// The bounds of a tally.
const (
	withinBounds Bound = iota
	// BoundTotal: the gateway-wide bound (503).
	BoundTotal
	// BoundPerIP: the client IP's share, or its fair share under
	// pressure (429).
	BoundPerIP
)

// acquire takes n units for ip, or none and the bound that refused. The
// per-IP share is checked first, so one address that exhausts its share is
// told so (429) rather than blamed on everyone (503); under pressure its
// fair share is checked next, for the same reason.
func (t *tally) acquire(ip string, n int64) Bound {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.perIP[ip]+n > t.maxPerIP {
		return BoundPerIP
	}
	if t.total+n > t.max*pressureNum/pressureDen && t.overShareLocked(ip, n) {
		return BoundPerIP
	}
	if t.total+n > t.max {
		return BoundTotal
	}
	t.total += n
	t.perIP[ip] += n
	return withinBounds
}

// overShare reports whether ip holds more than its fair share now (the
// keys an eviction should come from first).
func (t *tally) overShare(ip string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overShareLocked(ip, 0)
}

// overShareLocked reports whether ip, holding n more, would hold more
// than the total bound divided among the keys holding something; t.mu is
// held.
func (t *tally) overShareLocked(ip string, n int64) bool {
	keys := int64(len(t.perIP))
	if t.perIP[ip] == 0 {
		keys++
	}
	return t.perIP[ip]+n > max(1, t.max/keys)
}

// release returns n units of ip; an IP holding nothing is forgotten, so
// the map holds only addresses with something in hand.
func (t *tally) release(ip string, n int64) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total -= n
	if t.perIP[ip] -= n; t.perIP[ip] <= 0 {
		delete(t.perIP, ip)
	}
}

// held is the number of units held now, in all.
func (t *tally) held() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
