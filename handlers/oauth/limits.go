package oauth

import (
	"errors"
	"net/http"
	"strconv"
	"time"

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
// refuses too — fail closed — but as the gateway's fault: outage is told
// the part that failed, after Retry-After is set, and the cause is logged
// once with the request id; no caller is told it asked too often.
func (s *Server) limited(endpoint limitEndpoint, perMinute, totalPerMinute int, refuse http.HandlerFunc, outage func(w http.ResponseWriter, r *http.Request, part string)) func(http.Handler) http.Handler {
	newLimiter := func(name string, n int) *middleware.Limiter {
		return middleware.NewSpendLimiter(name, n, time.Minute, s.cfg.NewCounter, nil)
	}
	perAddress := newLimiter(string(endpoint), perMinute)
	total := newLimiter(string(endpoint)+"_total", totalPerMinute)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The one client key of every per-address bound: an IPv6
			// caller by its prefix (http.client_ipv6_prefix).
			reason := reasonRateLimited
			limited, err := perAddress.Spend(w, r, string(endpoint)+":"+middleware.RequestClientKey(r))
			if !limited {
				reason = reasonRateLimitedTotal
				limited, err = total.Spend(w, r, string(endpoint)+":all")
			}
			if !limited {
				next.ServeHTTP(w, r)
				return
			}
			if err != nil {
				s.unavailable(w, r, err, func(part string) { outage(w, r, part) })
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

// unavailable logs err, a failure of one of the gateway's own
// dependencies, once with the request id, sets Retry-After: 1 (the
// dependencies' breakers try again within a second) and has answer
// render the refusal naming the part that failed ("budget store", or
// "store" for any other error).
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, err error, answer func(part string)) {
	part := "store"
	var de *middleware.DependencyError
	if errors.As(err, &de) {
		part = de.Part
	}
	s.cfg.Log.Error("the "+part+" is unavailable; answered unavailable",
		"request_id", middleware.RecordFromContext(r.Context()).RequestID(), "path", r.URL.Path, "error", err.Error())
	w.Header().Set("Retry-After", "1")
	answer(part)
}
