package middleware

import (
	"net/http"
	"time"

	"github.com/go-chi/httprate"
)

// NewLimiter is the one way the gateway builds a rate limit: n per window,
// counted in newCounter(name) when newCounter is set (shared between
// replicas through Redis), in memory otherwise. A counter that fails makes
// OnLimit report "limited" — the caller answers, so every limit fails
// closed — after counterFailed, when set, is told why.
func NewLimiter(name string, n int, window time.Duration, newCounter func(name string) httprate.LimitCounter, counterFailed func(error)) *httprate.RateLimiter {
	opts := []httprate.Option{httprate.WithErrorHandler(func(_ http.ResponseWriter, _ *http.Request, err error) {
		if counterFailed != nil {
			counterFailed(err)
		}
	})}
	if newCounter != nil {
		opts = append(opts, httprate.WithLimitCounter(newCounter(name)))
	}
	return httprate.NewRateLimiter(n, window, opts...)
}
