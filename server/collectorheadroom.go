package server

import (
	"context"
	"time"
)

// The soft memory limit's headroom for request bodies and requests in
// flight (bodyHeadroom).
const (
	// headroomStep is the granularity the limit follows the buffered body
	// bytes in, so the runtime is not re-tuned for every body chunk.
	headroomStep = 1 << 20
	// headroomPoll is how often the buffered bytes are looked at.
	headroomPoll = 100 * time.Millisecond
	// requestHeadroom is the room each request in flight is given: about
	// what a 64 KiB fragment of a 200 KiB document holds at its peak (the
	// Contents answer and the decoded file, ≈ 490 KB).
	requestHeadroom = 512 << 10
)

// bodyHeadroom keeps the soft memory limit (runtime.memory_limit) above
// the request-body bytes callers make the gateway hold. The configured
// limit is the gateway's own working set (chosen for the 20 MB diff,
// docs/performance.md "Collector policy"); body bytes, bounded by
// http.body_budget_bytes, come on top of it. Without the headroom, the
// abuse run's attackers, each within its share, filled the 32 MiB body
// budget past the 24 MiB limit, and the collector ran continuously: 437
// collections in 14 s (6 in 5 s unattacked), half the gateway's CPU, most
// of it scanning the stacks of the requests held in flight, and the
// honest callers' p99 four times their baseline (docs/security.md).
//
// Requests in flight get room too: each holds its working memory beside
// the configured working set, and 64 clients reading fragments at once
// held past the limit, so the collector ran back to back and a fragment
// cost 2.2–2.7 ms of CPU at 64 clients against 1.0–1.3 ms at 8
// (docs/performance.md, "Collector policy"). That room is at most the
// configured limit again, so the limit at most doubles for them; a single
// request, the 20 MB diff's case, adds half a MiB.
type bodyHeadroom struct {
	limit    int64        // the configured limit
	buffered func() int64 // body bytes held now (BodyBudget.Buffered)
	inFlight func() int64 // requests being served now (InFlight.Current)
	set      func(int64) int64
	applied  int64
}

// limitFor is the limit with buffered body bytes and requests in flight:
// the configured limit plus twice the bytes and requestHeadroom a request
// (up to the configured limit in all), rounded up to headroomStep. Twice
// the bytes, because a body's buffer grows by doubling as its bytes
// arrive, so it may be up to twice what it has read (middleware
// readBody); measured, the heap in use under the abuse run's 8 addresses
// reached 46 MiB with at most 32 MiB of body bytes held.
func (h *bodyHeadroom) limitFor(buffered, inFlight int64) int64 {
	room := 2*max(0, buffered) + min(max(0, inFlight)*requestHeadroom, h.limit)
	return h.limit + (room+headroomStep-1)/headroomStep*headroomStep
}

// adjust moves the runtime's limit to follow the bytes and requests held
// now, when they crossed a step.
func (h *bodyHeadroom) adjust(context.Context) {
	if want := h.limitFor(h.buffered(), h.inFlight()); want != h.applied {
		h.set(want)
		h.applied = want
	}
}

// startBodyHeadroom keeps the limit applied from runtime.memory_limit
// above the bytes the body budget holds and the requests in flight, until
// stop; it does nothing when
// the limit is off or the environment's GOMEMLIMIT set it (an operator's
// own limit is left as given). On stop the configured limit is restored.
func (g *Gateway) startBodyHeadroom(ctx context.Context, getenv func(string) string, t runtimeTuner) (stop func()) {
	if getenv("GOMEMLIMIT") != "" || g.cfg.MemoryLimit <= 0 || g.cfg.MemoryLimit == memoryLimitOff {
		return func() {}
	}
	h := &bodyHeadroom{limit: g.cfg.MemoryLimit, buffered: g.bounds.bodies.Buffered, inFlight: g.bounds.inFlight.Current,
		set: t.setMemoryLimit, applied: g.cfg.MemoryLimit}
	stopPoll := every(ctx, headroomPoll, h.adjust)
	return func() {
		stopPoll()
		t.setMemoryLimit(h.limit)
	}
}
