package middleware

import (
	"errors"
	"sync"
	"time"
)

// ErrBreakerOpen is what a Breaker answers, without calling its
// dependency, while the dependency is known to be down.
var ErrBreakerOpen = errors.New("circuit breaker open: the dependency failed recently")

// Breaker bounds how long each call waits for a dependency that is down.
// Closed, every call goes through. A failure opens it: for the next
// Cooldown every call fails at once with ErrBreakerOpen instead of
// waiting on its own dial. After Cooldown one call (and only one) is let
// through as a trial; its success closes the breaker, its failure opens
// it for another Cooldown. So a dependency that answers again is used
// again within Cooldown, without anyone resetting the breaker.
type Breaker struct {
	cooldown time.Duration
	onChange func(open bool)
	now      func() time.Time

	mu        sync.Mutex
	open      bool
	openUntil time.Time
	trial     bool // a trial call is under way
}

// NewBreaker returns a closed breaker that stays open cooldown after a
// failure; onChange, when set, is told each time it opens or closes
// (metrics).
func NewBreaker(cooldown time.Duration, onChange func(open bool)) *Breaker {
	if cooldown <= 0 {
		panic("middleware: a breaker needs a positive cooldown")
	}
	return &Breaker{cooldown: cooldown, onChange: onChange, now: time.Now}
}

// Do calls fn unless the breaker is open, and records its outcome. An
// error for which failure reports false (a missing row, a caller that
// went away) is returned without counting against the dependency; a nil
// failure counts every error.
func (b *Breaker) Do(fn func() error, failure func(error) bool) error {
	if b == nil {
		return fn()
	}
	trial, ok := b.admit()
	if !ok {
		return ErrBreakerOpen
	}
	err := fn()
	b.record(trial, err != nil && (failure == nil || failure(err)))
	return err
}

// Open reports whether the breaker is open (a trial under way counts as
// open: the dependency has not answered yet).
func (b *Breaker) Open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}

// Cooling reports whether the breaker is open and its cooldown not yet
// over. A call that must not count towards the breaker — a write, which
// can fail for reasons reads do not share, such as a full disk — fails at
// once while it is cooling, and otherwise goes to the dependency without
// being recorded.
func (b *Breaker) Cooling() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open && b.now().Before(b.openUntil)
}

func (b *Breaker) admit() (trial, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.open:
		return false, true
	case b.trial || b.now().Before(b.openUntil):
		return false, false
	}
	b.trial = true
	return true, true
}

func (b *Breaker) record(trial, failed bool) {
	b.mu.Lock()
	changed := false
	switch {
	case failed:
		changed = !b.open
		b.open, b.openUntil = true, b.now().Add(b.cooldown)
	case b.open && (trial || !b.trial):
		// A trial that succeeded closes it; so does a call admitted
		// before the breaker opened that has now succeeded, since the
		// dependency answered.
		changed = true
		b.open = false
	}
	if trial {
		b.trial = false
	}
	b.mu.Unlock()
	if changed && b.onChange != nil {
		b.onChange(failed)
	}
}
