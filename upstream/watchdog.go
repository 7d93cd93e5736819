package upstream

import (
	"context"
	"sync"
	"time"
)

// watchdog cancels a request when one wait for progress exceeds the I/O
// timeout. It is armed before each blocking step and disarmed after it.
type watchdog struct {
	d      time.Duration
	cancel context.CancelFunc
	mu     sync.Mutex
	timer  *time.Timer
	expiry bool
}

func newWatchdog(d time.Duration, cancel context.CancelFunc) *watchdog {
	return &watchdog{d: d, cancel: cancel}
}

func (w *watchdog) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(w.d, w.fire)
		return
	}
	w.timer.Reset(w.d)
}

func (w *watchdog) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *watchdog) fire() {
	w.mu.Lock()
	w.expiry = true
	w.mu.Unlock()
	w.cancel()
}

func (w *watchdog) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expiry
}

// stop releases the timer and the request context.
func (w *watchdog) stop() {
	w.disarm()
	w.cancel()
}
