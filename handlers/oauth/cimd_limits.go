package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// A fetch of a client metadata document is an outbound request a caller
// can start with one anonymous /oauth/token, so fetches are bounded per
// client address and in all. Only fetches spend: a cached document or
// failure, and a fetch another caller started, cost nothing. With
// Config.NewCounter the counts live in Redis, as the other per-address
// limits do, so every replica spends from one rate.

// Default fetch rates.
const (
	// DefaultClientMetadataFetchesPerMinute bounds the fetches one client
	// address may cause a minute: a client needs one per document lifetime.
	DefaultClientMetadataFetchesPerMinute = 10
	// DefaultClientMetadataTotalFetchesPerMinute bounds the fetches of all
	// addresses together, against a caller with many addresses.
	DefaultClientMetadataTotalFetchesPerMinute = 120
)

// errMetadataRate refuses a lookup that would have fetched past a rate; it
// is the one refusal a caller is told apart (429 and Retry-After), since
// it says nothing of the URL and a client should try again later.
var errMetadataRate = errors.New("too many client metadata documents fetched in the last minute")

// metadataRetryAfter is the Retry-After of a rate refusal, in seconds: the
// sliding window forgets a fetch within a minute.
const metadataRetryAfter = "60"

// Lookups refused by a rate, as Observe is told them.
const (
	lookupRateLimitedAddress = "rate_limited_address"
	lookupRateLimitedTotal   = "rate_limited_total"
)

// fetchRates are the per-address and total fetch rates.
type fetchRates struct {
	perAddress, total *httprate.RateLimiter
}

// newFetchRates returns the rates, counted in newCounter's counters
// ("client_metadata_address", "client_metadata_total") when it is set. A
// counter that fails (Redis unreachable) refuses: fail closed.
func newFetchRates(perAddress, total int, newCounter func(limit string) httprate.LimitCounter, log *slog.Logger) *fetchRates {
	limiter := func(name string, perMinute int) *httprate.RateLimiter {
		return middleware.NewLimiter(name, perMinute, time.Minute, newCounter, func(err error) {
			log.Warn("client metadata fetch rate counter failed; refusing", "limit", name, "error", err.Error())
		})
	}
	return &fetchRates{
		perAddress: limiter("client_metadata_address", perAddress),
		total:      limiter("client_metadata_total", total),
	}
}

// spend takes one fetch from address's rate, then from the total; it
// returns the Observe result and the reason of a refusal, or "" and nil.
// The address spends first, so a caller past its own rate does not use up
// everyone's.
func (r *fetchRates) spend(ctx context.Context, address string) (string, error) {
	if !spendOne(ctx, r.perAddress, address) {
		return lookupRateLimitedAddress, fmt.Errorf("%w: by this client address (oauth.client_metadata_fetches_per_minute)", errMetadataRate)
	}
	if !spendOne(ctx, r.total, "all") {
		return lookupRateLimitedTotal, fmt.Errorf("%w: by all client addresses (oauth.client_metadata_total_fetches_per_minute)", errMetadataRate)
	}
	return "", nil
}

// spendOne takes one from lim's count for key, as OnLimit does for a
// request; false when none is left or the counter failed. A fetch has no
// answer of its own, so the rate headers OnLimit writes are dropped.
func spendOne(ctx context.Context, lim *httprate.RateLimiter, key string) bool {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return false
	}
	return !lim.OnLimit(droppedHeaders{}, r, key)
}

// droppedHeaders is a ResponseWriter whose headers and body go nowhere.
type droppedHeaders http.Header

func (d droppedHeaders) Header() http.Header       { return http.Header(d) }
func (droppedHeaders) Write(b []byte) (int, error) { return len(b), nil }
func (droppedHeaders) WriteHeader(int)             {}

// fetchAddressKey is the context key of the client address a lookup is
// made for.
type fetchAddressKey struct{}

// withFetchAddress notes r's client address (middleware.RequestClientKey, the key of
// every per-address bound) in its context: fosite calls the storage, which
// looks documents up, with the request's context only.
func withFetchAddress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), fetchAddressKey{}, middleware.RequestClientKey(r))))
	})
}

// fetchAddress is the client address of ctx; lookups without one (none
// come from a request that did not pass withFetchAddress) share one rate.
func fetchAddress(ctx context.Context) string {
	if ip, ok := ctx.Value(fetchAddressKey{}).(string); ok && ip != "" {
		return ip
	}
	return "unknown"
}
