package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// A fetch of a client metadata document is an outbound request a caller
// can start with one anonymous /oauth/token, so fetches are bounded: every
// fetch spends the caller's own rate (per client address); a fetch of a
// new document also needs room in its host's budget and in the total, and
// spends them only when it brings a usable document. So junk — URLs that
// fail — spends only its caller's own rate and cannot drain the pools real
// clients' first sign-ins need, and one host's documents cannot take
// another host's budget. A cached document or failure, and a fetch another
// caller started, cost nothing; a known-good document is revalidated
// without touching the shared pools, and while they are empty (or the
// caller's own rate is spent) it is served stale (cimd_cache.go). With
// Config.NewCounter the counts live in Redis, as the other per-address
// limits do, so every replica spends from one rate.
//
// The shared pools are looked at before a fetch and spent after it, so a
// burst of concurrent first fetches can pass them by a few; the caller's
// own rate, spent before, bounds that burst.

// Default fetch rates.
const (
	// DefaultClientMetadataFetchesPerMinute bounds the fetches one client
	// address may cause a minute: a client needs one per document lifetime.
	DefaultClientMetadataFetchesPerMinute = 10
	// DefaultClientMetadataHostFetchesPerMinute bounds the new documents
	// fetched from one host a minute.
	DefaultClientMetadataHostFetchesPerMinute = 60
	// DefaultClientMetadataTotalFetchesPerMinute bounds the new documents
	// fetched from all hosts together, against a caller with many
	// addresses.
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
	lookupRateLimitedHost    = "rate_limited_host"
	lookupRateLimitedTotal   = "rate_limited_total"
	// lookupBudgetStoreDown: a rate's counter failed (Redis unreachable);
	// refused as the gateway's fault, nothing fetched.
	lookupBudgetStoreDown = "budget_store_unavailable"
)

// fetchRates are the per-address, per-host and total fetch rates.
type fetchRates struct {
	perAddress, perHost, total *middleware.Limiter
	hostLimit, totalLimit      int
}

// newFetchRates returns the rates, counted in newCounter's counters
// ("client_metadata_address", "client_metadata_host",
// "client_metadata_total") when it is set. A counter that fails (Redis
// unreachable) refuses — fail closed — but as the budget store's
// unavailability (middleware.ErrUnavailable), never as a spent rate.
func newFetchRates(perAddress, perHost, total int, newCounter func(limit string) httprate.LimitCounter, log *slog.Logger) *fetchRates {
	limiter := func(name string, perMinute int) *middleware.Limiter {
		return middleware.NewSpendLimiter(name, perMinute, time.Minute, newCounter, func(err error) {
			log.Warn("client metadata fetch rate counter failed; refusing", "limit", name, "error", err.Error())
		})
	}
	return &fetchRates{
		perAddress: limiter("client_metadata_address", perAddress),
		perHost:    limiter("client_metadata_host", perHost),
		total:      limiter("client_metadata_total", total),
		hostLimit:  perHost, totalLimit: total,
	}
}

// spendAddress takes one fetch from address's rate; it returns the
// Observe result and the reason of a refusal, or "" and nil.
func (r *fetchRates) spendAddress(ctx context.Context, address string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return lookupRateLimitedAddress, err
	}
	switch limited, err := r.perAddress.Spend(droppedHeaders{}, req, address); {
	case err != nil:
		return lookupBudgetStoreDown, err
	case limited:
		return lookupRateLimitedAddress, fmt.Errorf("%w: by this client address (oauth.client_metadata_fetches_per_minute)", errMetadataRate)
	}
	return "", nil
}

// roomFor reports whether host's budget and the total each have a fetch
// left, without spending; it returns the Observe result and the reason
// when not. A counter that fails has no room.
func (r *fetchRates) roomFor(host string) (string, error) {
	if room, err := hasRoom(r.perHost, host, r.hostLimit); err != nil {
		return lookupBudgetStoreDown, err
	} else if !room {
		return lookupRateLimitedHost, fmt.Errorf("%w: from this host (oauth.client_metadata_host_fetches_per_minute)", errMetadataRate)
	}
	if room, err := hasRoom(r.total, "all", r.totalLimit); err != nil {
		return lookupBudgetStoreDown, err
	} else if !room {
		return lookupRateLimitedTotal, fmt.Errorf("%w: by all client addresses (oauth.client_metadata_total_fetches_per_minute)", errMetadataRate)
	}
	return "", nil
}

// spendShared takes one fetch from host's budget and the total, after a
// fetch of a new document brought a usable one. A pool already full stays
// full: the document is cached either way.
func (r *fetchRates) spendShared(ctx context.Context, host string) {
	spendOne(ctx, r.perHost, host)
	spendOne(ctx, r.total, "all")
}

// hasRoom reports whether lim's count for key is below limit; a counter
// that fails is the budget store's unavailability.
func hasRoom(lim *middleware.Limiter, key string, limit int) (bool, error) {
	_, rate, err := lim.Status(key)
	if err != nil {
		return false, middleware.Unavailable(middleware.PartBudgetStore, err)
	}
	return int(math.Round(rate))+1 <= limit, nil
}

// spendOne takes one from lim's count for key, as OnLimit does for a
// request; false when none is left or the counter failed. A fetch has no
// answer of its own, so the rate headers OnLimit writes are dropped.
func spendOne(ctx context.Context, lim *middleware.Limiter, key string) bool {
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
// every per-address bound) in its context: the client lookup, which
// fetches documents, is handed the request's context only.
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
