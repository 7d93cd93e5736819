package middleware

import (
	"context"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
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
	// Addresses, if set, counts the streams per client key as well, across
	// the key's connections, and cuts off a key that resets far more than
	// it completes (AddressResets).
	Addresses *AddressResets
	// CutOff, if set, is told every client key cut off, with the net
	// resets that did it (a log line, a metric).
	CutOff func(r *http.Request, net int)
	// Refused, if set, is told every stream of a cut-off key that is not
	// served: "resets_per_ip" (metrics).
	Refused func(bound string)
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
// completions by the allowance.
//
// With Addresses it counts them per client key too, so opening a new
// connection for every allowance buys nothing: once a key is cut off, its
// streams are not served — its own connection is closed, or, when the
// connection is a trusted proxy's (carrying other clients), the stream is
// answered 429 with Retry-After — and the listener refuses its new
// connections until the cut-off ends.
//
// It must sit outside everything that may end early for its own reasons
// (it looks only at the request context), and after ClientIP (it counts
// by the client key). HTTP/1 requests pass through uncounted: one
// connection carries one request at a time, so resetting costs a client a
// new connection.
func ResetGuard(o ResetGuardOptions) func(http.Handler) http.Handler {
	allowance := o.Allowance
	if allowance <= 0 {
		allowance = ResetAllowance
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l, ok := r.Context().Value(ledgerKey{}).(*streamLedger)
			if !ok || r.ProtoMajor != 2 {
				next.ServeHTTP(w, r)
				return
			}
			key := RequestClientKey(r)
			if left, cut := o.Addresses.cutOff(key); cut {
				refuseCutOff(w, r, l, left, o.Refused)
				return
			}
			next.ServeHTTP(w, r)
			reset := r.Context().Err() != nil
			if reset && o.Reset != nil {
				o.Reset()
			}
			closeNow, closedBefore, resets, completed := l.count(reset, allowance)
			// Streams ended by the gateway's own close of the connection
			// are not the client's resets. The address is counted before
			// the connection is closed, so a client that reconnects at
			// once finds its address already cut off.
			if o.Addresses != nil && !closedBefore {
				if cut, n := o.Addresses.Stream(key, reset); cut {
					if o.CutOff != nil {
						o.CutOff(r, n)
					}
					closeNow = closeNow || ownConnection(r)
				}
			}
			if closeNow {
				if o.Closed != nil && resets > completed+allowance {
					o.Closed(r, resets, completed)
				}
				l.close()
			}
		})
	}
}

// count counts one ended stream on l and reports whether the connection is
// to be closed now (once), whether the gateway had closed it before, and
// its counts.
func (l *streamLedger) count(reset bool, allowance int) (closeNow, closedBefore bool, resets, completed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	closedBefore = l.closed
	if reset {
		l.resets++
	} else {
		l.completed++
	}
	closeNow = !l.closed && l.resets > l.completed+allowance
	if closeNow {
		l.closed = true
	}
	return closeNow, closedBefore, l.resets, l.completed
}

// close closes l's connection for a cut-off address.
func (l *streamLedger) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	_ = l.conn.Close()
}

// cutOff is CutOff on a nil count too (none kept: nothing is cut off).
func (a *AddressResets) cutOff(key string) (time.Duration, bool) {
	if a == nil {
		return 0, false
	}
	return a.CutOff(key)
}

// refuseCutOff does not serve a stream of a cut-off key: the key's own
// connection is closed; a trusted proxy's, which carries other clients'
// streams too, stays, and the stream is answered 429 with Retry-After.
func refuseCutOff(w http.ResponseWriter, r *http.Request, l *streamLedger, left time.Duration, refused func(string)) {
	if refused != nil {
		refused("resets_per_ip")
	}
	if ownConnection(r) {
		l.close()
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(left.Seconds()))))
	Refuse(w, r, toolerr.New(toolerr.RateLimited,
		"this client address reset far more HTTP/2 streams than it completed; retry later").With("bound", "resets_per_ip"))
}

// ownConnection reports whether r came on a connection of its client's own
// (the client address is the TCP peer), not a trusted proxy's.
func ownConnection(r *http.Request) bool {
	ip := RecordFromContext(r.Context()).ClientIP()
	return ip == "" || ip == peerAddr(r.RemoteAddr).Unmap().String()
}
