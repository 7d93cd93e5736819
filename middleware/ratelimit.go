package middleware

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Budgets are the per-caller request budgets: one for reads (every MCP
// message that is not a write tool call), one for write tool calls, one
// more for the write calls that store a row per call (ToolPolicy.Dispatch),
// and a per-IP ceiling on the calls made with credentials the gateway has
// not verified (docs/architecture.md#load-bounds). "Per IP" and "the client
// IP" are per RequestClientKey: an IPv6 client by its prefix, so rotating
// addresses inside it buys no fresh budget.
type Budgets struct {
	read, write, ipCeiling *Limiter
	dispatch               *Limiter // nil: no bound
	policies               Policies
	rejected               func(budget string)
	log                    *slog.Logger
}

// The budgets a request can be refused by, as 429 answers, metrics and
// shared counters name them.
const (
	BudgetRead     = "read"
	BudgetWrite    = "write"
	BudgetDispatch = "dispatch"
	// BudgetIPCeiling bounds, per client IP, the calls made with
	// credentials the gateway has not verified.
	BudgetIPCeiling = "ip_ceiling"
	// BudgetRefusedBearers bounds, per client IP, the bearers refused
	// before the budgets are reached (RefusedBearers).
	BudgetRefusedBearers = "refused_bearers"
)

// BudgetNames are every budget: the one list the metrics' budget label
// and docs/metrics.md follow.
var BudgetNames = []string{BudgetRead, BudgetWrite, BudgetDispatch, BudgetIPCeiling, BudgetRefusedBearers}

// BudgetOptions configure NewBudgets.
type BudgetOptions struct {
	ReadPerWindow, WritePerWindow int
	// IPCeilingPerWindow bounds, per client IP, the tool calls made with an
	// unverified (passthrough) credential, whatever credential each one
	// carries: inventing bearers then buys no more calls than one.
	IPCeilingPerWindow int
	// RefusedBearersPerWindow bounds, per client IP, the bearers refused
	// before the budgets are reached (NewRefusedBearers); 0 is no bound.
	RefusedBearersPerWindow int
	Window                  time.Duration
	// DispatchPerWindow bounds, per caller, the calls of Dispatch tools
	// over DispatchWindow (a longer window than Window: what it bounds is
	// stored for days); 0 is no bound.
	DispatchPerWindow int
	DispatchWindow    time.Duration
	// NewCounter returns the counter of one budget (BudgetNames), shared
	// between replicas (Redis); nil keeps counts in memory.
	NewCounter func(budget string) httprate.LimitCounter
	// Rejected, if set, is told each time a budget refuses a request (metrics).
	Rejected func(budget string)
	// Log is where a counter that failed is logged (nil: slog's default).
	Log *slog.Logger
}

// NewBudgets returns the budgets. Keys are a verified principal's key, the
// hash of a passthrough credential for the tools that send it upstream, or
// the client IP otherwise — never a session, so a caller cannot reset a
// budget by reconnecting.
func NewBudgets(p Policies, o BudgetOptions) *Budgets {
	// A counter error (Redis unreachable) refuses, failing closed, as
	// 503 unavailable: the gateway's fault, not a spent budget.
	limiter := func(budget string, n int, window time.Duration) *Limiter {
		return NewSpendLimiter(budget, n, window, o.NewCounter, nil)
	}
	ceiling := o.IPCeilingPerWindow
	if ceiling <= 0 {
		ceiling = o.ReadPerWindow
	}
	b := &Budgets{
		read: limiter(BudgetRead, o.ReadPerWindow, o.Window), write: limiter(BudgetWrite, o.WritePerWindow, o.Window),
		ipCeiling: limiter(BudgetIPCeiling, ceiling, o.Window), policies: p, rejected: o.Rejected, log: o.Log,
	}
	if o.DispatchPerWindow > 0 {
		b.dispatch = limiter(BudgetDispatch, o.DispatchPerWindow, o.DispatchWindow)
	}
	return b
}

// Handler spends one unit of the right budget (and, for an unverified
// credential, of its IP's ceiling) or answers 429 with Retry-After (set by
// httprate).
func (b *Budgets) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := RecordFromContext(r.Context())
		ipKey := "ip:" + RequestClientKey(r)
		call := rec.Call()
		var pol ToolPolicy
		known := false
		if call.Method == "tools/call" {
			pol, known = b.policies.ToolPolicy(call.Tool)
		}
		budget, lim := BudgetRead, b.read
		if known && pol.Write {
			budget, lim = BudgetWrite, b.write
		}
		key, ceiling := ipKey, false
		if p := PrincipalFromContext(r.Context()); p != nil {
			switch {
			case p.Verified():
				key = p.Key
			case known && !pol.Anonymous:
				// The credential goes upstream: it has its own budget, and
				// its IP's ceiling bounds how many such credentials help.
				key, ceiling = p.Key, true
			}
			// An unverified bearer on an anonymous tool or a non-call
			// message is not an identity: the client IP's budget.
		}
		if !b.spend(w, r, lim, budget, budget+":"+key) {
			return
		}
		// After the write budget, so a call it refuses spends none of the
		// (much smaller) dispatch budget; before the tool, so a refused
		// dispatch reads and stores nothing.
		if known && pol.Dispatch && b.dispatch != nil && !b.spend(w, r, b.dispatch, BudgetDispatch, BudgetDispatch+":"+key) {
			return
		}
		if ceiling && !b.spend(w, r, b.ipCeiling, BudgetIPCeiling, ipKey) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// spend takes one unit of lim for key, or refuses the request and reports
// false: 429 when the budget is spent, 503 unavailable when its counter
// failed (Redis down), which is no budget's doing.
func (b *Budgets) spend(w http.ResponseWriter, r *http.Request, lim *Limiter, budget, key string) bool {
	limited, err := lim.Spend(w, r, key)
	if !limited {
		return true
	}
	if err != nil {
		refuseUnavailableErr(b.log, w, r, err)
		return false
	}
	if b.rejected != nil {
		b.rejected(budget)
	}
	Refuse(w, r, toolerr.New(toolerr.RateLimited, "the %s budget for this caller is spent; retry later", budget).With("budget", budget))
	return false
}
