package middleware

import (
	"context"
	"net/http"
	"sync"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// InFlightOptions configure NewInFlight.
type InFlightOptions struct {
	// Max is the number of requests served at once by the whole gateway;
	// MaxPerIP by one client IP.
	Max, MaxPerIP int
	// Reserve is the part of Max that only verified principals can take
	// (Reserved); 0 keeps none.
	Reserve int
	// Stalls, if set, are the requests waiting for their own body bytes,
	// the longest-waiting of which is evicted when Max is reached.
	Stalls *Stalls
	// Exempt requests are served whatever the count (health probes and
	// /metrics, which must answer most when the gateway is busiest).
	Exempt func(*http.Request) bool
	// Refused, if set, is told each refusal: "in_flight" or
	// "in_flight_per_ip" (metrics).
	Refused func(bound string)
}

// InFlight bounds the requests being served at once, so a flood of slow
// requests cannot make the gateway hold unbounded goroutines, buffers and
// upstream calls. Past the client IP's share it answers 429, past the
// gateway-wide bound 503, both with Retry-After, before reading the body.
// Under pressure the share is the fair one of the tally (the bound divided
// among the keys in flight), and at the bound the requests that have waited
// longest for their own body bytes are evicted, one at a time until there
// is room, before anyone is refused.
type InFlight struct {
	t    *tally
	anon *tally // requests past authentication without a verified principal
	opt  InFlightOptions
}

// NewInFlight returns the bound; it panics on a bound that is not
// positive or a reserve that leaves nothing (a construction-time
// misconfiguration).
func NewInFlight(o InFlightOptions) *InFlight {
	if o.Reserve < 0 || o.Reserve >= o.Max {
		panic("middleware: the verified reserve must be at least 0 and below the in-flight bound")
	}
	anon := int64(o.Max - o.Reserve)
	return &InFlight{t: newTally(int64(o.Max), int64(o.MaxPerIP)), anon: newTally(anon, anon), opt: o}
}

// Current is the number of requests being served now.
func (f *InFlight) Current() int64 { return f.t.held() }

// flightSlot is one request's place in flight; released once, by the
// handler's return or by its eviction, whichever comes first.
type flightSlot struct {
	once    sync.Once
	release func()
}

type flightSlotKey struct{}

// releaseSlot frees the in-flight place of the request of ctx, if any.
func releaseSlot(ctx context.Context) {
	if s, ok := ctx.Value(flightSlotKey{}).(*flightSlot); ok {
		s.once.Do(s.release)
	}
}

// Handler counts the request while it is served, or refuses it.
func (f *InFlight) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.opt.Exempt != nil && f.opt.Exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		ip := RequestClientKey(r)
		b := f.opt.Stalls.admit("in_flight", f.t.overShare, func() Bound { return f.t.acquire(ip, 1) })
		if b != withinBounds {
			refuseBound(w, r, b, "in_flight", f.opt.Refused, "requests in flight")
			return
		}
		slot := &flightSlot{release: func() { f.t.release(ip, 1) }}
		defer slot.once.Do(slot.release)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), flightSlotKey{}, slot)))
	})
}

// Reserved keeps InFlightOptions.Reserve for verified principals: it sits
// after authentication, where the principal is known, and a request
// without one the gateway verified (anonymous, or a Forgejo bearer, which
// only Forgejo can verify) is served only while such requests hold less
// than Max − Reserve; past that it is 503 with Retry-After. So however many
// addresses send anonymous work, a verified caller finds a place.
func (f *InFlight) Reserved(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.opt.Reserve == 0 || verifiedPrincipal(PrincipalFromContext(r.Context())) {
			next.ServeHTTP(w, r)
			return
		}
		if b := f.anon.acquire("", 1); b != withinBounds {
			refuseBound(w, r, BoundTotal, "in_flight", f.opt.Refused, "requests in flight open to callers without a verified token")
			return
		}
		defer f.anon.release("", 1)
		next.ServeHTTP(w, r)
	})
}

// verifiedPrincipal reports whether the gateway itself verified p: a
// gateway-issued or project token looked up in the store.
func verifiedPrincipal(p *Principal) bool {
	return p != nil && (p.Kind == OAuthConsent || p.Kind == LegacyProjectToken)
}

// refuseBound answers a request refused by a tally: 429 for the client
// IP's share, 503 for the gateway-wide bound, both with Retry-After: 1 and
// the bound's name, and a connection that is not kept (the body is unread).
func refuseBound(w http.ResponseWriter, r *http.Request, b Bound, name string, refused func(string), what string) {
	e := toolerr.New(toolerr.Overloaded, "the gateway is at its bound of %s; retry later", what)
	if b == BoundPerIP {
		name += "_per_ip"
		e = toolerr.New(toolerr.RateLimited, "this client address is at its share of %s; retry later", what)
	}
	if refused != nil {
		refused(name)
	}
	w.Header().Set("Retry-After", "1")
	closeAfter(w, r)
	Refuse(w, r, e.With("bound", name))
}

// closeAfter asks an HTTP/1 server to close the connection after this
// refusal: the body was left unread, and a client that is refused should
// not keep a connection slot. (HTTP/2 has no such header; its streams are
// reset by the server instead.)
func closeAfter(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}
