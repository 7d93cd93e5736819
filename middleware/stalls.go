package middleware

import (
	"sync"
	"time"
)

// Stalls lists the requests now waiting for their own body bytes, so a
// gateway-wide bound that is full can evict the one that has waited
// longest instead of refusing a newcomer: a stalled request holds a
// request slot and body bytes while doing no work. InFlight and BodyBudget
// share one; a budgeted body is listed from the start of its request until
// it is whole, so it is evictable from the moment it holds a place.
type Stalls struct {
	mu      sync.Mutex
	waiting map[*stall]struct{}
	evicted func(bound string)
}

// stall is one request waiting for its bytes since since (its last byte,
// or when its request began); since is guarded by Stalls.mu.
type stall struct {
	key   string
	since time.Time
	evict func()
}

// NewStalls returns an empty registry; evicted, if set, is told each
// eviction by the bound that made it ("in_flight" or "body_budget").
func NewStalls(evicted func(bound string)) *Stalls {
	return &Stalls{waiting: map[*stall]struct{}{}, evicted: evicted}
}

// add lists a request waiting for its bytes since since; nil on a nil
// registry, as every method here takes.
func (s *Stalls) add(key string, since time.Time, evict func()) *stall {
	if s == nil {
		return nil
	}
	w := &stall{key: key, since: since, evict: evict}
	s.relist(w)
	return w
}

// relist lists w again after remove.
func (s *Stalls) relist(w *stall) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.waiting[w] = struct{}{}
	s.mu.Unlock()
}

// remove takes w off the list and reports whether it was on it (an
// eviction may have taken it first).
func (s *Stalls) remove(w *stall) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, listed := s.waiting[w]
	delete(s.waiting, w)
	return listed
}

// touch records that w's bytes last came at since.
func (s *Stalls) touch(w *stall, since time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	w.since = since
	s.mu.Unlock()
}

// Waiting is the number of requests waiting for their bytes now.
func (s *Stalls) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting)
}

// admit runs acquire and, while it meets the gateway-wide bound, evicts
// the longest-stalled request (evictOldest) and tries again, until it is
// admitted, refused by another bound, or nothing stalled is left. One
// eviction is not always enough: the room it frees is free for anyone, so
// another request arriving at the same moment may take it first (an
// honest diff page was refused so in an 8-address abuse run), and a
// victim may hold fewer bytes than the newcomer asks for (a stalled
// 100-byte request, evicted for a 32 KiB step). Each round ends a request
// that was doing no work, so the loop ends by the number stalled.
func (s *Stalls) admit(bound string, heavy func(key string) bool, acquire func() Bound) Bound {
	b := acquire()
	for b == BoundTotal && s.evictOldest(bound, heavy) {
		b = acquire()
	}
	return b
}

// evictOldest evicts the request that has waited longest for its bytes,
// taken from the keys for which heavy holds when there is one (the keys
// over their fair share), else from any key. It reports whether it evicted
// one; the victim's holdings are released before it returns, but the room
// is anyone's: callers go through admit.
func (s *Stalls) evictOldest(bound string, heavy func(key string) bool) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	var victim, heavyVictim *stall
	for w := range s.waiting {
		if victim == nil || w.since.Before(victim.since) {
			victim = w
		}
		if heavy(w.key) && (heavyVictim == nil || w.since.Before(heavyVictim.since)) {
			heavyVictim = w
		}
	}
	if heavyVictim != nil {
		victim = heavyVictim
	}
	if victim != nil {
		delete(s.waiting, victim)
	}
	s.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.evict()
	if s.evicted != nil {
		s.evicted(bound)
	}
	return true
}
