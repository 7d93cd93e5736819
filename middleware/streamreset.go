package middleware

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// ResetAllowance is how many more HTTP/2 streams a connection may have
// reset than it completed before it is closed: an honest client cancels a
// call now and then (an abandoned tool call, a closed tab); a rapid-reset
// flood resets almost every stream it opens.
const ResetAllowance = 100

// streamLedger counts one connection's HTTP/2 streams by how they ended.
type streamLedger struct {
	conn net.Conn
	mu   sync.Mutex
	// resets are streams whose request context ended (the client reset
	// the stream or left) before the handler returned; completed the rest.
	resets, completed int
	closed            bool
}

type ledgerKey struct{}

// WithStreamLedger is an http.Server ConnContext hook: it gives every
// connection a ledger of its streams, which ResetGuard keeps.
func WithStreamLedger(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, ledgerKey{}, &streamLedger{conn: c})
}

// ResetGuardOptions configure ResetGuard.
type ResetGuardOptions struct {
	// Allowance is how many more streams a connection may reset than it
	// completes; zero means ResetAllowance.
	Allowance int
	// Reset, if set, is told every reset stream (metrics).
	Reset func()
	// Closed, if set, is told every connection closed for its resets,
	// with the client key (a log line, a metric).
	Closed func(r *http.Request, resets, completed int)
}

// ResetGuard closes an HTTP/2 connection that resets far more streams than
// it completes (HTTP/2 "rapid reset", CVE-2023-44487). net/http already
// bounds the handlers one connection runs at once (MaxConcurrentStreams)
// and skips streams reset before their handler started; a stream reset
// after its handler started still runs it and writes an access line, so a
// client opening and resetting streams as fast as it can costs the gateway
// log volume and work for nothing. ResetGuard counts, per connection,
// streams whose request context ended before the handler returned against
// those that completed, and closes the connection once the resets pass the
// completions by the allowance. It must sit outside everything that may
// end early for its own reasons (it looks only at the request context).
// HTTP/1 requests pass through uncounted: one connection carries one
// request at a time, so resetting costs a client a new connection.
func ResetGuard(o ResetGuardOptions) func(http.Handler) http.Handler {
	allowance := o.Allowance
	if allowance <= 0 {
		allowance = ResetAllowance
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			l, ok := r.Context().Value(ledgerKey{}).(*streamLedger)
			if !ok || r.ProtoMajor != 2 {
				return
			}
			reset := r.Context().Err() != nil
			if reset && o.Reset != nil {
				o.Reset()
			}
			l.mu.Lock()
			if reset {
				l.resets++
			} else {
				l.completed++
			}
			closeNow := !l.closed && l.resets > l.completed+allowance
			if closeNow {
				l.closed = true
			}
			resets, completed := l.resets, l.completed
			l.mu.Unlock()
			if closeNow {
				if o.Closed != nil {
					o.Closed(r, resets, completed)
				}
				_ = l.conn.Close()
			}
		})
	}
}
