package diffread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// callWatch bounds one MCP call (the connection's initialize, or one
// page) by idleness rather than by a total deadline: the call ends when no
// byte came from the endpoint for idle — while it waits for the answer's
// headers as much as between reads of its body — and when the transport
// refuses an answer over the envelope. It ends the call by cancelling its
// context and keeps why, since the SDK reports a failed read only as text.
// The transport finds it in the request's context.
type callWatch struct {
	idle   time.Duration
	cancel context.CancelFunc

	mu      sync.Mutex
	timer   *time.Timer
	refusal *BoundError // the first, without page and offset; nil while none
	ended   bool
}

type watchKey struct{}

// watchCall starts the watch of one call made with the returned context.
func watchCall(ctx context.Context, idle time.Duration) (context.Context, *callWatch) {
	ctx, cancel := context.WithCancel(ctx)
	w := &callWatch{idle: idle, cancel: cancel}
	w.timer = time.AfterFunc(idle, func() { w.refuse(BoundIdle, "no bytes for %v", idle) })
	return context.WithValue(ctx, watchKey{}, w), w
}

// watchOf returns the watch of the call a request belongs to: nil for a
// request outside any call, whose methods then do nothing.
func watchOf(ctx context.Context) *callWatch {
	w, _ := ctx.Value(watchKey{}).(*callWatch)
	return w
}

// progress says bytes came: the idle timer starts again.
func (w *callWatch) progress() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended && w.refusal == nil {
		w.timer.Reset(w.idle)
	}
}

// refuse ends the call at a bound and returns the error the transport
// gives the SDK.
func (w *callWatch) refuse(b Bound, format string, a ...any) error {
	detail := fmt.Sprintf(format, a...)
	if w != nil {
		w.mu.Lock()
		if w.refusal == nil && !w.ended {
			w.refusal = &BoundError{Bound: b, Detail: detail}
		}
		w.mu.Unlock()
		w.cancel()
	}
	return errors.New(detail)
}

// end stops the watch once the call returned and says whether it was
// refused; an idle refusal counts only when the call failed (a timer that
// fired as the answer arrived did not stop it).
func (w *callWatch) end(callFailed bool) *BoundError {
	w.mu.Lock()
	w.ended = true
	w.timer.Stop()
	r := w.refusal
	w.mu.Unlock()
	w.cancel()
	if r != nil && (callFailed || r.Bound != BoundIdle) {
		return r
	}
	return nil
}

// watchedBody is a response body that counts as progress every read that
// brought bytes, and refuses a read past the envelope instead of
// truncating silently.
type watchedBody struct {
	rc    io.ReadCloser
	left  int64
	watch *callWatch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body that ends exactly at the bound from
		// one that goes on.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, b.watch.refuse(BoundEnvelope, "a response over the %d-byte envelope", MaxResponseBytes)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if n > 0 {
		b.watch.progress()
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }
