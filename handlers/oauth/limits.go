package oauth

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// The two endpoints anyone may call that make the gateway store something
// — /oauth/authorize (a login session) and /oauth/register (a client) —
// are limited per client address, and then gateway-wide, so that no
// number of addresses makes them store faster than the total rate; what
// they store is capped in rows too (Config.MaxUnusedClients,
// Config.MaxLoginSessions: the oldest go). With Config.NewCounter the
// counts live in Redis, so every replica spends from one limit per address
// and one in all (docs/architecture.md#load-bounds).

// Default per-address and gateway-wide limits, and caps.
const (
	DefaultAuthorizationsPerMinute      = 60
	DefaultRegistrationsPerMinute       = 20
	DefaultTotalAuthorizationsPerMinute = 600
	DefaultTotalRegistrationsPerMinute  = 200
	// DefaultMaxUnusedClients and DefaultMaxLoginSessions bound the rows;
	// at the default total rates the oldest unused client is evicted no
	// sooner than 50 minutes after it registered, and a login session
	// (600 a minute, 10 minutes' lifetime) never.
	DefaultMaxUnusedClients = 10000
	DefaultMaxLoginSessions = 10000
)

// limitEndpoint names a limited endpoint: the Redis counter and the
// metrics label.
type limitEndpoint string

const (
	limitAuthorize limitEndpoint = "authorize"
	limitRegister  limitEndpoint = "register"
)

// refusalReason labels a refusal in metrics.
type refusalReason string

// The reasons an endpoint refuses a request before doing anything.
const (
	reasonRateLimited             refusalReason = "rate_limited"
	reasonRateLimitedTotal        refusalReason = "rate_limited_total"
	reasonOversizedParameter      refusalReason = "oversized_parameter"
	reasonRepeatedParameter       refusalReason = "repeated_parameter"
	reasonInvalidRedirectURI      refusalReason = "invalid_redirect_uri"
	reasonUnsupportedResponseMode refusalReason = "unsupported_response_mode"
)

// Refusal is one endpoint and reason Config.Refused can be told.
type Refusal struct{ Endpoint, Reason string }

// Refusals are every endpoint and reason Config.Refused can be told, so
// the metrics show each at zero before the first (a test drives every
// refusal and checks it is listed here): both limited endpoints' rates,
// and the parameter problems of /oauth/authorize (knownParams).
var Refusals = []Refusal{
	{string(limitRegister), string(reasonRateLimited)},
	{string(limitRegister), string(reasonRateLimitedTotal)},
	{string(limitAuthorize), string(reasonRateLimited)},
	{string(limitAuthorize), string(reasonRateLimitedTotal)},
	{string(limitAuthorize), string(reasonOversizedParameter)},
	{string(limitAuthorize), string(reasonRepeatedParameter)},
	{string(limitAuthorize), string(reasonInvalidRedirectURI)},
	{string(limitAuthorize), string(reasonUnsupportedResponseMode)},
}

// refused tells the metrics that an endpoint refused a request.
func (s *Server) refused(endpoint limitEndpoint, reason refusalReason) {
	if s.cfg.Refused != nil {
		s.cfg.Refused(string(endpoint), string(reason))
	}
}

// limited returns the middleware that lets perMinute requests a minute
// from one client address, and totalPerMinute from all addresses together,
// through to an endpoint and answers the rest with refuse, after setting
// Retry-After. The address spends first, so a caller past its own rate
// does not use up everyone's. A counter that fails (Redis unreachable)
// refuses too: fail closed.
func (s *Server) limited(endpoint limitEndpoint, perMinute, totalPerMinute int, refuse http.HandlerFunc) func(http.Handler) http.Handler {
	newLimiter := func(name string, n int) *httprate.RateLimiter {
		return middleware.NewLimiter(name, n, time.Minute, s.cfg.NewCounter, func(err error) {
			s.cfg.Log.Warn("OAuth rate limit counter failed; refusing", "endpoint", string(endpoint), "limit", name, "error", err.Error())
		})
	}
	perAddress := newLimiter(string(endpoint), perMinute)
	total := newLimiter(string(endpoint)+"_total", totalPerMinute)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The one client key of every per-address bound: an IPv6
			// caller by its prefix (http.client_ipv6_prefix).
			reason := refusalReason("")
			switch {
			case perAddress.OnLimit(w, r, string(endpoint)+":"+middleware.RequestClientKey(r)):
				reason = reasonRateLimited
			case total.OnLimit(w, r, string(endpoint)+":all"):
				reason = reasonRateLimitedTotal
			}
			if reason == "" {
				next.ServeHTTP(w, r)
				return
			}
			if w.Header().Get("Retry-After") == "" {
				w.Header().Set("Retry-After", strconv.Itoa(1))
			}
			s.refused(endpoint, reason)
			refuse(w, r)
		})
	}
}
