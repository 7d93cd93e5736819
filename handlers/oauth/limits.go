package oauth

import (
	"net/http"
	"strconv"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// The two endpoints anyone may call that make the gateway store something
// — /oauth/authorize (a login session) and /oauth/register (a client) —
// are limited per client address. With Config.NewCounter the counts live
// in Redis, so every replica spends from one limit per address
// (docs/architecture.md#load-bounds).

// Default per-address limits.
const (
	DefaultAuthorizationsPerMinute = 60
	DefaultRegistrationsPerMinute  = 20
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
	{string(limitAuthorize), string(reasonRateLimited)},
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

// perAddress returns the middleware that lets perMinute requests a minute
// from one client address through to an endpoint and answers the rest with
// refuse, after setting Retry-After. A counter that fails (Redis
// unreachable) refuses too: fail closed.
func (s *Server) perAddress(endpoint limitEndpoint, perMinute int, refuse http.HandlerFunc) func(http.Handler) http.Handler {
	lim := middleware.NewLimiter(string(endpoint), perMinute, time.Minute, s.cfg.NewCounter, func(err error) {
		s.cfg.Log.Warn("OAuth rate limit counter failed; refusing", "endpoint", string(endpoint), "error", err.Error())
	})
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The one client key of every per-address bound: an IPv6
			// caller by its prefix (http.client_ipv6_prefix).
			if lim.OnLimit(w, r, string(endpoint)+":"+middleware.RequestClientKey(r)) {
				if w.Header().Get("Retry-After") == "" {
					w.Header().Set("Retry-After", strconv.Itoa(1))
				}
				s.refused(endpoint, reasonRateLimited)
				refuse(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
