package middleware

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// BodyBudgetOptions configure NewBodyBudget.
type BodyBudgetOptions struct {
	// Max is the request-body bytes the whole gateway buffers at once;
	// MaxPerIP those of one client IP.
	Max, MaxPerIP int64
	// RouteCap, if set, is the most body bytes the request's route reads
	// (64 KiB for /oauth/*, 1 MiB for MCP): a declared length over it is
	// 413 before anything is reserved.
	RouteCap func(*http.Request) int64
	// MinRate (bytes a second) and Grace make the minimum data rate of a
	// body: it may fall at most Grace behind MinRate, counted from when
	// the handler starts, and go at most Grace without a byte, before its
	// connection's read deadline passes and the request ends; MaxTime
	// bounds the whole body (the server's ReadTimeout). Zero MinRate sets
	// no rate (unit tests only).
	MinRate        int64
	Grace, MaxTime time.Duration
	// Stalls, if set, is where a body waiting for its bytes is listed, so
	// the longest-waiting one can be evicted when Max is reached.
	Stalls *Stalls
	// Refused, if set, is told each refusal: "body_budget" or
	// "body_budget_per_ip" (metrics).
	Refused func(bound string)
}

// BodyBudget is a global budget of request-body bytes held at once. The
// route's cap bounds one body; without this, hundreds of slow 1 MiB bodies
// made the gateway hold hundreds of megabytes in a hostile-load run.
//
// Nothing is reserved beyond what has arrived: a declared length over the
// route's cap is 413 at once, and every body reserves its bytes in steps as
// they are read, so a request that declares much and sends nothing holds
// nothing (four connections each declaring 8 MiB to /oauth/token
// used to hold the whole budget for 60 s). Reservations last until the
// handler returns, since the MCP peek keeps the body for the handler.
//
// A body that stops arriving is cut by the minimum data rate (its
// connection's read deadline), and when the budget is full the bodies that
// have waited longest for their own bytes are evicted (Stalls) — from a key
// over its fair share first — until the newcomer's bytes fit, before it is
// refused.
type BodyBudget struct {
	t   *tally
	opt BodyBudgetOptions
}

// NewBodyBudget returns the budget; it panics on a bound that is not
// positive (a construction-time misconfiguration).
func NewBodyBudget(o BodyBudgetOptions) *BodyBudget {
	return &BodyBudget{t: newTally(o.Max, o.MaxPerIP), opt: o}
}

// Buffered is the body bytes reserved now.
func (b *BodyBudget) Buffered() int64 { return b.t.held() }

// bodyStep is how much a body reserves at a time, at most.
const bodyStep = 32 << 10

// BodyBudgetError is what a budgeted body's reader returns when the
// budget cannot cover the next bytes, or when the body was evicted to make
// room (Bound is then BoundTotal).
type BodyBudgetError struct{ Bound Bound }

func (e *BodyBudgetError) Error() string {
	return fmt.Sprintf("request body budget exhausted (bound %d)", e.Bound)
}

// Handler budgets the body's bytes around next.
func (b *BodyBudget) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if limit := b.declaredCap(r); r.ContentLength > limit {
			// It could never be read: not a matter of waiting.
			closeAfter(w, r)
			Refuse(w, r, toolerr.New(toolerr.BodyTooLarge, "request body over %d bytes", limit))
			return
		}
		body := &budgetedBody{ReadCloser: r.Body, b: b, ip: RequestClientKey(r), declared: r.ContentLength,
			rc: http.NewResponseController(w), start: time.Now(), release: func() { releaseSlot(r.Context()) }}
		body.last = body.start
		body.setDeadline()
		// Listed as waiting from the moment it holds a place, before its
		// first read: a wave of fresh stalled requests that has filled the
		// in-flight bound before any of them reached a read must still be
		// evictable.
		body.waiting = b.opt.Stalls.add(body.ip, body.start, body.evict)
		defer body.end()
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// declaredCap is the largest declared length the request may have: its
// route's cap, and never more than one address's share.
func (b *BodyBudget) declaredCap(r *http.Request) int64 {
	limit := b.opt.MaxPerIP
	if b.opt.RouteCap != nil {
		limit = min(limit, b.opt.RouteCap(r))
	}
	return limit
}

// budgetedBody reserves a body's bytes as it reads them, holds its
// connection to the minimum data rate, and is listed in Stalls from the
// start of its request until the body is whole (or its handler returns):
// until then it is waiting for its own bytes.
type budgetedBody struct {
	io.ReadCloser
	b        *BodyBudget
	ip       string
	declared int64 // -1 when unknown
	rc       *http.ResponseController
	start    time.Time
	release  func() // the request's in-flight place, on eviction
	waiting  *stall // its entry in Stalls (nil without Stalls)

	mu             sync.Mutex
	last           time.Time // when the last bytes arrived
	reserved, used int64
	failed         error
	evicted        bool
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return b.ReadCloser.Read(p)
	}
	b.mu.Lock()
	if b.failed != nil {
		defer b.mu.Unlock()
		return 0, b.failed
	}
	if b.declared > 0 && b.used >= b.declared {
		// All of it arrived: what is left is the end of the body, which
		// needs no room (net/http never reads past a declared length).
		b.mu.Unlock()
		return b.ReadCloser.Read(p)
	}
	if b.reserved == b.used {
		b.mu.Unlock()
		if err := b.reserve(); err != nil {
			return 0, err
		}
		b.mu.Lock()
		if b.failed != nil { // evicted since
			defer b.mu.Unlock()
			return 0, b.failed
		}
	}
	if room := b.reserved - b.used; int64(len(p)) > room {
		p = p[:room]
	}
	b.mu.Unlock()

	n, err := b.ReadCloser.Read(p)

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.evicted {
		return 0, b.failed
	}
	if n > 0 {
		b.used += int64(n)
		b.last = time.Now()
		if err == nil && (b.declared < 0 || b.used < b.declared) {
			b.setDeadline()
			b.b.opt.Stalls.touch(b.waiting, b.last)
		}
	}
	if err != nil || (b.declared > 0 && b.used >= b.declared) {
		// Whole (or ended): no longer waiting for its bytes.
		b.b.opt.Stalls.remove(b.waiting)
	}
	return n, err
}

// reserve reserves the next step (no more than the declared length left);
// when the budget is full it evicts the longest-stalled bodies until the
// step fits (Stalls.admit) before it refuses. It runs without b.mu, so an
// evictor never holds its own lock while it waits for a victim's (two
// bodies evicting each other would deadlock), and off the list of Stalls,
// so it cannot evict itself; an eviction of b that comes meanwhile wins.
func (b *budgetedBody) reserve() error {
	b.mu.Lock()
	step := int64(bodyStep)
	if b.declared > 0 {
		step = max(1, min(step, b.declared-b.used))
	}
	b.mu.Unlock()
	s, t := b.b.opt.Stalls, b.b.t
	listed := s.remove(b.waiting)
	bound := s.admit("body_budget", t.overShare, func() Bound { return t.acquire(b.ip, step) })
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.evicted {
		if bound == withinBounds {
			t.release(b.ip, step)
		}
		return b.failed
	}
	if listed {
		s.relist(b.waiting)
	}
	if bound != withinBounds {
		name := "body_budget"
		if bound == BoundPerIP {
			name += "_per_ip"
		}
		if b.b.opt.Refused != nil {
			b.b.opt.Refused(name)
		}
		b.failed = &BodyBudgetError{Bound: bound}
		return b.failed
	}
	b.reserved += step
	return nil
}

// setDeadline sets the connection's read deadline to the minimum data
// rate: Grace after the moment the bytes read so far were due at MinRate,
// and Grace after the last bytes came (bytes sent early buy no time to
// stall in), never past MaxTime from the start. b.mu is held (or b is new).
//
// Never once the body is whole: the read that reaches its end starts
// net/http's background read of the connection (which clears the
// deadline), and a deadline set after it would make that read time out
// and cancel the request's context at Grace, ending a long call (a diff
// page, a document read) with nothing written.
func (b *budgetedBody) setDeadline() {
	o := b.b.opt
	if o.MinRate <= 0 {
		return
	}
	due := b.start.Add(time.Duration(b.used) * time.Second / time.Duration(o.MinRate))
	d := minTime(due.Add(o.Grace), b.last.Add(o.Grace))
	if o.MaxTime > 0 {
		d = minTime(d, b.start.Add(o.MaxTime))
	}
	// Not every writer can (a recorder in tests): then the server's
	// ReadTimeout is the only bound.
	_ = b.rc.SetReadDeadline(d)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// evict ends a body that waits for its bytes to make room: its bytes and
// its in-flight place are released now, its connection's read deadline
// is set to now (so the waiting read returns at once), and every later
// read fails with a BodyBudgetError.
func (b *budgetedBody) evict() {
	b.mu.Lock()
	b.evicted = true
	b.failed = &BodyBudgetError{Bound: BoundTotal}
	b.releaseBytesLocked()
	b.mu.Unlock()
	b.release()
	_ = b.rc.SetReadDeadline(time.Now())
}

// end is the handler's return: the body is no longer listed, and its
// bytes are released.
func (b *budgetedBody) end() {
	b.b.opt.Stalls.remove(b.waiting)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseBytesLocked()
}

func (b *budgetedBody) releaseBytesLocked() {
	b.b.t.release(b.ip, b.reserved)
	b.reserved, b.used = 0, 0
}

// bodyBudgetRefusal maps a body read error to the refusal to answer, or
// nil when the error is not the budget's.
func bodyBudgetRefusal(err error) *toolerr.Error {
	var be *BodyBudgetError
	if !errors.As(err, &be) {
		return nil
	}
	if be.Bound == BoundPerIP {
		return toolerr.New(toolerr.RateLimited, "this client address is at its share of request-body bytes buffered; retry later").With("bound", "body_budget_per_ip")
	}
	return toolerr.New(toolerr.Overloaded, "the gateway is at its bound of request-body bytes buffered; retry later").With("bound", "body_budget")
}
