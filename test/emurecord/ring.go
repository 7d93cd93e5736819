// Package emurecord is the request record the emulators of test/ keep, a
// bounded ring, and the route that tells how much it holds.
//
// The demo runs the emulators for as long as a person leaves it up. A
// record of every request, headers included, grew without end (≈ 0.45 GB
// an hour under load); tests read far fewer requests than the ring keeps.
// The route (Path) lets a test through the demo binary see the bound hold.
package emurecord

// The ring's bounds, per emulator: the newest MaxRequests requests, within
// MaxHeadBytes of request lines and headers and MaxBodyBytes of bodies
// (as Cost estimates them). Whichever bound is reached first drops the
// oldest requests. The gateway's requests have heads of about a KiB, so
// the count binds first; the bytes bound requests with large headers or
// bodies (the gateway's bodies are grant POSTs of a few KiB; a test reads
// the body of one of the last few requests).
const (
	MaxRequests  = 10000
	MaxHeadBytes = 16 << 20
	MaxBodyBytes = 16 << 20
)

// Cost is what one kept request holds in memory, in bytes.
type Cost struct {
	// Head is its request line and headers (HeadBytes).
	Head int
	// Body is the part of its body the emulator keeps.
	Body int
}

// Ring is a bounded record of requests, oldest first. The zero Ring is
// empty and ready; it is not safe for concurrent use (the emulators hold
// their own lock around it).
type Ring[T any] struct {
	entries    []entry[T]
	head, body int
	seen       int
}

type entry[T any] struct {
	v    T
	cost Cost
}

// Add records v, which costs c, and drops the oldest requests while the
// ring is over a bound: at least a tenth of what it holds at a time, so
// each request is copied a bounded number of times, and never v itself.
func (r *Ring[T]) Add(v T, c Cost) {
	r.seen++
	r.entries = append(r.entries, entry[T]{v, c})
	r.head += c.Head
	r.body += c.Body
	if len(r.entries) <= MaxRequests && r.head <= MaxHeadBytes && r.body <= MaxBodyBytes {
		return
	}
	drop := 0
	least := max(1, len(r.entries)/10)
	for drop < len(r.entries)-1 && (drop < least || r.head > MaxHeadBytes || r.body > MaxBodyBytes) {
		r.head -= r.entries[drop].cost.Head
		r.body -= r.entries[drop].cost.Body
		drop++
	}
	n := copy(r.entries, r.entries[drop:])
	clear(r.entries[n:])
	r.entries = r.entries[:n]
}

// All returns the kept requests, oldest first, in a new slice.
func (r *Ring[T]) All() []T {
	out := make([]T, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.v
	}
	return out
}

// Reset forgets every request, kept or seen.
func (r *Ring[T]) Reset() { *r = Ring[T]{} }

// Stats tells what the ring holds; describe names a request for Newest.
func (r *Ring[T]) Stats(describe func(T) string) Stats {
	s := Stats{Kept: len(r.entries), KeptHeadBytes: r.head, KeptBodyBytes: r.body, Seen: r.seen}
	if len(r.entries) > 0 {
		s.Newest = describe(r.entries[len(r.entries)-1].v)
	}
	return s
}
