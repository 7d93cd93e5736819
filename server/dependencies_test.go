package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStoreProbe: readiness pings on every call but writes at most every
// writeProbeEvery, reporting the last write's failure in between; a
// failed ping fails at once without a write.
func TestStoreProbe(t *testing.T) {
	now := time.Unix(0, 0)
	var pingErr, writeErr error
	writes := 0
	p := &storeProbe{
		ping:  func(context.Context) error { return pingErr },
		write: func(context.Context) error { writes++; return writeErr },
		now:   func() time.Time { return now },
	}
	ctx := context.Background()
	if err := p.check(ctx); err != nil || writes != 1 {
		t.Fatalf("first check: %v, %d writes", err, writes)
	}
	writeErr = errors.New("database or disk is full")
	now = now.Add(writeProbeEvery - time.Millisecond)
	if err := p.check(ctx); err != nil || writes != 1 {
		t.Fatalf("within the interval: %v, %d writes", err, writes)
	}
	now = now.Add(time.Millisecond)
	if err := p.check(ctx); !errors.Is(err, writeErr) || writes != 2 {
		t.Fatalf("after the interval: %v, %d writes", err, writes)
	}
	if err := p.check(ctx); !errors.Is(err, writeErr) || writes != 2 {
		t.Fatalf("the failed write stands until the next probe: %v, %d writes", err, writes)
	}
	pingErr = errors.New("connection refused")
	now = now.Add(writeProbeEvery)
	if err := p.check(ctx); !errors.Is(err, pingErr) || writes != 2 {
		t.Fatalf("ping failed: %v, %d writes", err, writes)
	}
}
