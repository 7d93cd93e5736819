package middleware

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// RefusedBearers bounds, per client IP, the bearers Authenticate refused
// in a window. A gateway-issued bearer costs a store lookup before it can
// be refused, and the budgets run only after authentication, so without
// this an address inventing bearers could make one lookup per request,
// limited only by its requests in flight. Once its refusals are used up,
// every bearer from that address is answered 429 before any lookup, until
// the window moves on; requests without a bearer are not affected.
type RefusedBearers struct {
	lim      *Limiter
	limit    int
	window   time.Duration
	rejected func(budget string)
	log      *slog.Logger
}

// NewRefusedBearers returns the bound of o.RefusedBearersPerWindow
// refusals per client IP and o.Window, counted in o.NewCounter's
// "refused_bearers" counter when it is set (shared between replicas), and
// reported to o.Rejected. It returns nil, no bound, when the number is not
// positive.
func NewRefusedBearers(o BudgetOptions) *RefusedBearers {
	if o.RefusedBearersPerWindow <= 0 {
		return nil
	}
	return &RefusedBearers{
		lim:   NewSpendLimiter(BudgetRefusedBearers, o.RefusedBearersPerWindow, o.Window, o.NewCounter, nil),
		limit: o.RefusedBearersPerWindow, window: o.Window, rejected: o.Rejected, log: o.Log,
	}
}

// refusedKey counts refusals by the client address's key (an IPv6
// address by its prefix), as the budgets do.
func refusedKey(r *http.Request) string { return "ip:" + RequestClientKey(r) }

// admit reports whether r's address may still have a bearer looked up; if
// not, it has answered 429. A counter that cannot be read (Redis down)
// refuses, as the budgets do, as 503 unavailable: the budget store's
// fault, not the address's.
func (b *RefusedBearers) admit(w http.ResponseWriter, r *http.Request) bool {
	_, rate, err := b.lim.Status(refusedKey(r))
	if err != nil {
		refuseUnavailableErr(b.log, w, r, Unavailable(PartBudgetStore, err))
		return false
	}
	if rate < float64(b.limit) {
		return true
	}
	if b.rejected != nil {
		b.rejected(BudgetRefusedBearers)
	}
	// The sliding window forgets a refusal within two windows; one is
	// the honest first guess.
	retry := max(1, int(b.window.Round(time.Second).Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	Refuse(w, r, toolerr.New(toolerr.RateLimited, "too many bearer tokens from this address were refused; retry later").With("budget", BudgetRefusedBearers))
	return false
}

// refused counts one refusal against r's address.
func (b *RefusedBearers) refused(w http.ResponseWriter, r *http.Request) {
	b.lim.OnLimit(w, r, refusedKey(r))
}
