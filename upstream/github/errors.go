package github

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// defaultRetryAfter is what a rate-limit answer without a usable
// retry-after or x-ratelimit-reset header tells the caller to wait: GitHub
// asks clients to wait at least a minute in that case.
const defaultRetryAfter = 60

// maxRetryAfter caps retry_after_seconds, so a wrong reset header cannot
// tell a caller to wait for days.
const maxRetryAfter = 3600

// transportCodes is the document provider's table of transport failures.
var transportCodes = upstream.TransportCodes{Name: "GitHub", Unavailable: toolerr.ProviderUnavailable,
	Timeout: toolerr.ProviderUnavailable, Framing: toolerr.ProviderMalformed, TooLarge: toolerr.ResponseTooLarge}

// transportError maps a strict-transport failure to a document provider code.
func transportError(err error) *toolerr.Error { return transportCodes.Error(err) }

// rateLimited reports whether a 403 or 429 answer is GitHub's rate limit
// (primary: x-ratelimit-remaining 0; secondary: retry-after; 429 always),
// and how many seconds to wait.
func rateLimited(status int, h http.Header, now time.Time) (int64, bool) {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return clampRetry(n), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return clampRetry(int64(t.Sub(now).Seconds() + 0.999)), true
		}
		return defaultRetryAfter, true
	}
	if strings.TrimSpace(h.Get("X-RateLimit-Remaining")) == "0" {
		if n, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64); err == nil {
			return clampRetry(n - now.Unix()), true
		}
		return defaultRetryAfter, true
	}
	if status == http.StatusTooManyRequests {
		return defaultRetryAfter, true
	}
	return 0, false
}

func clampRetry(n int64) int64 {
	switch {
	case n < 1:
		return 1
	case n > maxRetryAfter:
		return maxRetryAfter
	}
	return n
}

// rateLimitError is provider_rate_limited carrying retry_after_seconds.
func rateLimitError(status int, seconds int64) *toolerr.Error {
	return toolerr.New(toolerr.ProviderRateLimited, "GitHub's rate limit is exhausted; retry after %d seconds", seconds).
		With("retry_after_seconds", seconds).With("native_status", status)
}

// isJSON reports whether a Content-Type is JSON: application/json or a
// GitHub vendor type ending in +json, with at most a charset parameter.
func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || (strings.HasPrefix(mt, "application/vnd.github") && strings.HasSuffix(mt, "+json"))
}
