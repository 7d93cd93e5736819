package middleware

import (
	"errors"
	"testing"
	"time"
)

// TestBreaker: a failure opens the breaker; while open, calls fail at once
// without running; after the cooldown exactly one trial runs, whose
// failure opens it again and whose success closes it; an error the caller
// says is no failure of the dependency leaves it closed.
func TestBreaker(t *testing.T) {
	now := time.Unix(1000, 0)
	var changes []bool
	b := NewBreaker(time.Second, func(open bool) { changes = append(changes, open) })
	b.now = func() time.Time { return now }
	down := errors.New("connection refused")
	ran := 0
	call := func(err error) error {
		return b.Do(func() error { ran++; return err }, func(e error) bool { return e == down })
	}

	notFound := errors.New("not found")
	if err := call(notFound); err != notFound || b.Open() {
		t.Fatalf("an error that is no failure: %v, open %v", err, b.Open())
	}
	if err := call(down); err != down || !b.Open() {
		t.Fatalf("first failure: %v, open %v", err, b.Open())
	}
	ran = 0
	if err := call(nil); !errors.Is(err, ErrBreakerOpen) || ran != 0 {
		t.Fatalf("open: %v, ran %d", err, ran)
	}
	now = now.Add(999 * time.Millisecond)
	if err := call(nil); !errors.Is(err, ErrBreakerOpen) || ran != 0 {
		t.Fatalf("just before the cooldown ends: %v, ran %d", err, ran)
	}
	now = now.Add(time.Millisecond)
	if err := call(down); err != down || ran != 1 || !b.Open() {
		t.Fatalf("failed trial: %v, ran %d, open %v", err, ran, b.Open())
	}
	if err := call(nil); !errors.Is(err, ErrBreakerOpen) || ran != 1 {
		t.Fatalf("after a failed trial the cooldown starts again: %v, ran %d", err, ran)
	}

	// One trial at a time: while it runs, others fail at once.
	now = now.Add(time.Second)
	err := b.Do(func() error {
		ran++
		if inner := call(nil); !errors.Is(inner, ErrBreakerOpen) {
			t.Errorf("a second call during the trial: %v", inner)
		}
		return nil
	}, nil)
	if err != nil || ran != 2 || b.Open() {
		t.Fatalf("successful trial: %v, ran %d, open %v", err, ran, b.Open())
	}
	if err := call(nil); err != nil || ran != 3 {
		t.Fatalf("closed again: %v, ran %d", err, ran)
	}
	if len(changes) != 2 || !changes[0] || changes[1] {
		t.Fatalf("state changes %v, want [open closed]", changes)
	}
	var nilBreaker *Breaker
	if err := nilBreaker.Do(func() error { return down }, nil); err != down {
		t.Fatalf("nil breaker: %v", err)
	}
}

// TestBreakerCooling: a closed breaker is not cooling; a failure makes it
// cool for the cooldown and no longer after it, though it stays open
// until a trial succeeds.
func TestBreakerCooling(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewBreaker(time.Second, nil)
	b.now = func() time.Time { return now }
	if b.Cooling() {
		t.Fatal("a closed breaker is cooling")
	}
	_ = b.Do(func() error { return errors.New("connection refused") }, nil)
	if !b.Cooling() {
		t.Fatal("not cooling after a failure")
	}
	now = now.Add(time.Second)
	if b.Cooling() || !b.Open() {
		t.Fatalf("after the cooldown: cooling %v, open %v; want not cooling, still open", b.Cooling(), b.Open())
	}
	if (*Breaker)(nil).Cooling() {
		t.Fatal("a nil breaker is cooling")
	}
}
