package middleware

import (
	"net/http"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// InFlightOptions configure NewInFlight.
type InFlightOptions struct {
	// Max is the number of requests served at once by the whole gateway;
	// MaxPerIP by one client IP.
	Max, MaxPerIP int
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
type InFlight struct {
	t   *tally
	opt InFlightOptions
}

// NewInFlight returns the bound; it panics on a bound that is not
// positive (a construction-time misconfiguration).
func NewInFlight(o InFlightOptions) *InFlight {
	return &InFlight{t: newTally(int64(o.Max), int64(o.MaxPerIP)), opt: o}
}

// Current is the number of requests being served now.
func (f *InFlight) Current() int64 { return f.t.held() }

// Handler counts the request while it is served, or refuses it.
func (f *InFlight) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.opt.Exempt != nil && f.opt.Exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		ip := RequestClientKey(r)
		if b := f.t.acquire(ip, 1); b != withinBounds {
			refuseBound(w, r, b, "in_flight", f.opt.Refused, "requests in flight")
			return
		}
		defer f.t.release(ip, 1)
		next.ServeHTTP(w, r)
	})
}

// refuseBound answers a request refused by a tally: 429 for the client
// IP's share, 503 for the gateway-wide bound, both with Retry-After: 1 and
// the bound's name, and a connection that is not kept (the body is unread).
func refuseBound(w http.ResponseWriter, r *http.Request, b Bound, name string, refused func(string), what string) {
	e := toolerr.New(toolerr.Overloaded, "the gateway is at its bound of %s; retry later", what)
	if b == BoundPerIP {
		name += "_per_ip"
		e = toolerr.New(toolerr.RateLimited, "this client address is at its bound of %s; retry later", what)
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
