package middleware

import (
	"net/http"
	"time"

	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/handlers/toolerr"
)

// Budgets are the per-caller request budgets: one for reads (every MCP
// message that is not a write tool call), one for write tool calls.
type Budgets struct {
	read, write *httprate.RateLimiter
	policies    Policies
	rejected    func(budget string)
}

// BudgetOptions configure NewBudgets.
type BudgetOptions struct {
	ReadPerWindow, WritePerWindow int
	Window                        time.Duration
	// NewCounter returns the counter of one budget ("read" or "write"),
	// shared between replicas (Redis); nil keeps counts in memory.
	NewCounter func(budget string) httprate.LimitCounter
	// Rejected, if set, is told each time a budget refuses a request (metrics).
	Rejected func(budget string)
}

// NewBudgets returns the budgets. Keys are the principal's key, or the
// client IP for anonymous callers — never a session, so a caller cannot
// reset a budget by reconnecting.
func NewBudgets(p Policies, o BudgetOptions) *Budgets {
	limiter := func(budget string, n int) *httprate.RateLimiter {
		// A counter error (Redis unreachable) makes OnLimit report "limited";
		// the no-op handler leaves the answer to us, and we fail closed.
		opts := []httprate.Option{httprate.WithErrorHandler(func(http.ResponseWriter, *http.Request, error) {})}
		if o.NewCounter != nil {
			opts = append(opts, httprate.WithLimitCounter(o.NewCounter(budget)))
		}
		return httprate.NewRateLimiter(n, o.Window, opts...)
	}
	return &Budgets{read: limiter("read", o.ReadPerWindow), write: limiter("write", o.WritePerWindow), policies: p, rejected: o.Rejected}
}

// Handler spends one unit of the right budget or answers 429 with
// Retry-After (set by httprate).
func (b *Budgets) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := RecordFromContext(r.Context())
		key := "ip:" + rec.ClientIP()
		if p := PrincipalFromContext(r.Context()); p != nil {
			key = p.Key
		}
		budget, lim := "read", b.read
		if call := rec.Call(); call.Method == "tools/call" {
			if pol, ok := b.policies.ToolPolicy(call.Tool); ok && pol.Write {
				budget, lim = "write", b.write
			}
		}
		if lim.OnLimit(w, r, budget+":"+key) {
			if b.rejected != nil {
				b.rejected(budget)
			}
			if w.Header().Get("Retry-After") == "" {
				// httprate's counter failed (e.g. Redis down): fail closed.
				w.Header().Set("Retry-After", "1")
			}
			Refuse(w, r, toolerr.New(toolerr.RateLimited, "the %s budget for this caller is spent; retry later", budget).With("budget", budget))
			return
		}
		next.ServeHTTP(w, r)
	})
}
