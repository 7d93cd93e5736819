package middleware

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/httprate"
)

// Limiter is a rate limit that tells a spent limit from a counter that
// failed: the first is the caller's doing (429), the second the
// gateway's (503 unavailable).
type Limiter struct {
	*httprate.RateLimiter
}

// counterErrKey carries, through httprate's error handler, where Spend
// wants a counter's failure written.
type counterErrKey struct{}

// NewLimiter is the one way the gateway builds a rate limit: n per window,
// counted in newCounter(name) when newCounter is set (shared between
// replicas through Redis), in memory otherwise. A counter that fails makes
// OnLimit report "limited" — the caller answers, so every limit fails
// closed — after counterFailed, when set, is told why.
func NewLimiter(name string, n int, window time.Duration, newCounter func(name string) httprate.LimitCounter, counterFailed func(error)) *httprate.RateLimiter {
	return NewSpendLimiter(name, n, window, newCounter, counterFailed).RateLimiter
}

// NewSpendLimiter is NewLimiter whose Spend also returns a counter's
// failure, so the answer can say the budget store failed.
func NewSpendLimiter(name string, n int, window time.Duration, newCounter func(name string) httprate.LimitCounter, counterFailed func(error)) *Limiter {
	opts := []httprate.Option{httprate.WithErrorHandler(func(_ http.ResponseWriter, r *http.Request, err error) {
		if p, ok := r.Context().Value(counterErrKey{}).(*error); ok {
			*p = err
		}
		if counterFailed != nil {
			counterFailed(err)
		}
	})}
	if newCounter != nil {
		opts = append(opts, httprate.WithLimitCounter(newCounter(name)))
	}
	return &Limiter{httprate.NewRateLimiter(n, window, opts...)}
}

// Spend takes one unit for key. It reports limited when the request must
// be refused, and err, wrapped as a budget-store DependencyError, when
// that is because the counter failed rather than the limit was spent.
func (l *Limiter) Spend(w http.ResponseWriter, r *http.Request, key string) (limited bool, err error) {
	var failed error
	if !l.OnLimit(w, r.WithContext(context.WithValue(r.Context(), counterErrKey{}, &failed)), key) {
		return false, nil
	}
	if failed != nil {
		return true, Unavailable(PartBudgetStore, failed)
	}
	return true, nil
}
