package oauth

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/httprate"
)

// Client ID Metadata Documents (MCP authorization 2025-11-25, "SHOULD
// support"): a client whose client_id is an https URL of a JSON document of
// its metadata, fetched instead of registered. It is the gateway's only
// request to an origin a caller chooses, so it is opt-in and fenced: only
// hosts on an allowlist, on port 443 or an allowlisted port (checked before
// the name is resolved, so a caller cannot probe ports), over https with no
// redirects, within a timeout and a size bound, to public addresses only
// (the name is resolved, every address checked, and the connection made to
// a checked address, so a DNS answer cannot change between check and
// connect). Anyone can cause a lookup (a token request naming a URL
// client_id), so lookups are bounded too: what a fetch found, failure or
// document, is cached (cimd_cache.go), one fetch per URL runs at a time,
// fetches spend per-address and total rates (cimd_limits.go), and every
// refusal reads the same to the caller (cimd_refusal.go).

// ClientMetadataConfig configures Client ID Metadata Documents.
type ClientMetadataConfig struct {
	// Hosts are the host names client_id URLs may name; empty turns the
	// feature off (the default).
	Hosts []string
	// AllowLoopback lets a document live on a loopback address; for tests
	// and local development only.
	AllowLoopback bool
	// Ports are the ports besides 443 a client_id URL may name; without
	// them only the https default is fetched.
	Ports []int
	// RootCAs verify the documents' servers; nil means the system's roots
	// (which SSL_CERT_FILE can replace).
	RootCAs *x509.CertPool
	// FetchTimeout bounds one fetch, connection to last byte; zero means
	// defaultMetadataFetchTimeout.
	FetchTimeout time.Duration
	// FetchesPerMinute bounds the fetches one client address may cause;
	// zero means DefaultClientMetadataFetchesPerMinute.
	FetchesPerMinute int
	// HostFetchesPerMinute bounds the new documents fetched from one host;
	// zero means DefaultClientMetadataHostFetchesPerMinute.
	HostFetchesPerMinute int
	// TotalFetchesPerMinute bounds the new documents fetched from all
	// hosts together; zero means DefaultClientMetadataTotalFetchesPerMinute.
	TotalFetchesPerMinute int
	// Observe, if set, is told how each lookup of a document ended (one of
	// the lookup* results), for the metrics.
	Observe func(result string)
}

// How a lookup of a client metadata document ended: the results Observe
// is told, one per lookup.
const (
	lookupFetched       = "fetched"        // fetched and usable
	lookupFetchFailed   = "fetch_failed"   // fetched (or resolved) and refused
	lookupCacheHit      = "cache_hit"      // a cached document
	lookupCachedFailure = "cached_failure" // a cached failure: refused, no fetch
	lookupShared        = "shared"         // waited for another caller's fetch of the same URL
	lookupRefusedURL    = "refused_url"    // URL, host or port refused before any lookup
	lookupStale         = "stale"          // an expired known-good document, served while no fetch may be made
	// and lookupRateLimitedAddress, lookupRateLimitedHost,
	// lookupRateLimitedTotal, lookupBudgetStoreDown (cimd_limits.go)
)

// ClientMetadataLookupResults are the results Observe can be told, for
// metrics that show each from the start.
var ClientMetadataLookupResults = []string{
	lookupFetched, lookupFetchFailed, lookupCacheHit, lookupCachedFailure, lookupShared, lookupRefusedURL, lookupStale,
	lookupRateLimitedAddress, lookupRateLimitedHost, lookupRateLimitedTotal, lookupBudgetStoreDown,
}

// Client ID Metadata Document bounds (the cache's are in cimd_cache.go).
const (
	defaultMetadataFetchTimeout = 5 * time.Second
	maxMetadataBytes            = 64 << 10
	maxMetadataURLBytes         = 1024
)

// The ways a client_id URL or its document is refused. Each is the reason
// logged and tested; a caller is only ever told metadataRefusedText.
var (
	errMetadataURL      = errors.New("client_id is not an https URL with a path")
	errMetadataHost     = errors.New("client_id host is not in oauth.client_metadata_hosts")
	errMetadataPort     = errors.New("client_id port is neither 443 nor in oauth.client_metadata_ports")
	errMetadataAddress  = errors.New("client_id host does not resolve to public addresses only")
	errMetadataRedirect = errors.New("the client metadata document answered with a redirect")
	errMetadataStatus   = errors.New("the client metadata document could not be fetched")
	errMetadataTooLarge = errors.New("the client metadata document is larger than 64 KiB")
	errMetadataDocument = errors.New("the client metadata document is not valid")
)

// isMetadataURL reports whether a client_id names a metadata document
// rather than a registered client (whose IDs start with "cli_").
func isMetadataURL(clientID string) bool { return strings.HasPrefix(clientID, "https://") }

// clientDocument is a fetched, validated client metadata document.
type clientDocument struct {
	ClientID     string
	ClientName   string
	RedirectURIs []string
}

// metadataFetcher fetches and caches client metadata documents.
type metadataFetcher struct {
	hosts         []string
	ports         []int
	allowLoopback bool
	timeout       time.Duration
	client        *http.Client
	resolver      *net.Resolver
	now           func() time.Time
	log           *slog.Logger
	observe       func(result string)
	rates         *fetchRates

	mu    sync.Mutex
	cache map[string]cachedDocument
	// flights are the fetches under way, by client_id: a burst of one
	// client_id makes one fetch, which the rest wait for.
	flights map[string]*metadataFlight

	// redirects is the server's redirect URI rule, which a document's
	// redirect URIs meet as a registration's do.
	redirects redirectRule
}

// metadataFlight is one fetch under way; done closes when doc and err are
// set.
type metadataFlight struct {
	done chan struct{}
	doc  clientDocument
	err  error
}

// newMetadataFetcher returns the fetcher of cfg, logging refusals to log
// and counting its rates in newCounter's counters (nil: in memory), or nil
// when the feature is off.
func newMetadataFetcher(cfg ClientMetadataConfig, log *slog.Logger, newCounter func(limit string) httprate.LimitCounter) *metadataFetcher {
	if len(cfg.Hosts) == 0 {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &metadataFetcher{
		allowLoopback: cfg.AllowLoopback, ports: cfg.Ports, timeout: cmp.Or(cfg.FetchTimeout, defaultMetadataFetchTimeout),
		resolver: net.DefaultResolver, now: time.Now, log: log, observe: cfg.Observe,
		cache: map[string]cachedDocument{}, flights: map[string]*metadataFlight{},
	}
	if f.observe == nil {
		f.observe = func(string) {}
	}
	f.rates = newFetchRates(cmp.Or(cfg.FetchesPerMinute, DefaultClientMetadataFetchesPerMinute),
		cmp.Or(cfg.HostFetchesPerMinute, DefaultClientMetadataHostFetchesPerMinute),
		cmp.Or(cfg.TotalFetchesPerMinute, DefaultClientMetadataTotalFetchesPerMinute), newCounter, log)
	for _, h := range cfg.Hosts {
		f.hosts = append(f.hosts, strings.ToLower(h))
	}
	transport := &http.Transport{
		Proxy:                  nil, // the checked address is the one connected to
		DialContext:            f.dial,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    f.timeout,
		ResponseHeaderTimeout:  f.timeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableCompression:     true,
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
	}
	f.client = &http.Client{
		Transport: transport,
		Timeout:   f.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // never followed: refused below
		},
	}
	return f
}

// checkURL checks a client_id URL before anything is resolved or fetched.
func (f *metadataFetcher) checkURL(clientID string) (*url.URL, error) {
	u, err := url.Parse(clientID)
	if err != nil || len(clientID) > maxMetadataURLBytes || u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.Fragment != "" || strings.Contains(clientID, "#") || u.Path == "" || u.Path == "/" {
		return nil, errMetadataURL
	}
	if !slices.Contains(f.hosts, strings.ToLower(u.Hostname())) {
		return nil, fmt.Errorf("%w: %q", errMetadataHost, u.Hostname())
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n != 443 && !slices.Contains(f.ports, n) {
			return nil, fmt.Errorf("%w: %q", errMetadataPort, p)
		}
	}
	return u, nil
}

// get returns the client's document: from the cache while its entry is
// fresh (a cached failure is refused again without a fetch), else from the
// one fetch of that URL under way, else from a new fetch if the rates
// allow one (cimd_limits.go); an expired known-good document is served
// stale when they do not. Every refusal is a *metadataRefusal whose reason
// is logged here; callers show only its text.
func (f *metadataFetcher) get(ctx context.Context, clientID string) (clientDocument, error) {
	u, err := f.checkURL(clientID)
	if err != nil {
		// Cheap and the caller's own doing: debug, as protocol refusals are.
		f.observe(lookupRefusedURL)
		f.log.DebugContext(ctx, "client metadata document refused", f.logAttrs(clientID, err)...)
		return clientDocument{}, &metadataRefusal{reason: err}
	}
	host := strings.ToLower(u.Hostname())
	// At most twice round: the rates are looked at without the lock held
	// (they may be a Redis round trip), and another caller may have
	// started the fetch meanwhile.
	for spent := false; ; spent = true {
		f.mu.Lock()
		c, ok := f.cache[clientID]
		now := f.now()
		if ok && now.Before(c.expires) {
			f.mu.Unlock()
			return f.cached(ctx, clientID, c)
		}
		// A document that was good and has expired: revalidated without
		// the shared pools, served stale while no fetch may be made.
		stale := ok && c.err == nil && now.Before(c.staleUntil)
		fl, shared := f.flights[clientID]
		if !shared && spent {
			fl = &metadataFlight{done: make(chan struct{})}
			f.flights[clientID] = fl
			// The fetch is the URL's, not this caller's: it runs to its
			// own timeout even if this caller leaves, and what it finds is
			// cached for the next.
			go f.fly(context.WithoutCancel(ctx), clientID, host, !stale, fl)
		}
		f.mu.Unlock()
		if shared {
			f.observe(lookupShared)
		}
		if fl != nil {
			return f.await(ctx, fl)
		}
		result, err := f.rates.spendAddress(ctx, fetchAddress(ctx))
		if err == nil && !stale {
			result, err = f.rates.roomFor(host)
		}
		if err == nil && stale {
			if _, full := f.rates.roomFor(host); full != nil {
				err = full
			}
		}
		if err != nil {
			if stale {
				f.observe(lookupStale)
				f.log.DebugContext(ctx, "client metadata document served stale", append(f.logAttrs(clientID, err), "client_address", fetchAddress(ctx))...)
				return c.doc, nil
			}
			f.observe(result)
			f.log.DebugContext(ctx, "client metadata document refused", append(f.logAttrs(clientID, err), "client_address", fetchAddress(ctx))...)
			return clientDocument{}, &metadataRefusal{reason: err}
		}
	}
}

// cached answers a lookup from a fresh cache entry.
func (f *metadataFetcher) cached(ctx context.Context, clientID string, c cachedDocument) (clientDocument, error) {
	if c.err != nil {
		f.observe(lookupCachedFailure)
		f.log.DebugContext(ctx, "client metadata document refused (cached failure)", f.logAttrs(clientID, c.err)...)
		return clientDocument{}, &metadataRefusal{reason: c.err}
	}
	f.observe(lookupCacheHit)
	return c.doc, nil
}

// await waits for a flight to land, or for the caller to leave.
func (f *metadataFetcher) await(ctx context.Context, fl *metadataFlight) (clientDocument, error) {
	select {
	case <-fl.done:
	case <-ctx.Done():
		return clientDocument{}, &metadataRefusal{reason: fmt.Errorf("the request ended while its client metadata document was fetched: %w", ctx.Err())}
	}
	if fl.err != nil {
		return clientDocument{}, &metadataRefusal{reason: fl.err}
	}
	return fl.doc, nil
}

// fly makes a flight's fetch, caches what it found (a failure too) and
// lands the flight. A usable document of a new URL (spendShared) spends
// its host's budget and the total; a failure, or a known-good document
// revalidated, spends neither.
func (f *metadataFetcher) fly(ctx context.Context, clientID, host string, spendShared bool, fl *metadataFlight) {
	doc, ttl, err := f.fetch(ctx, clientID)
	now := f.now()
	c := cachedDocument{doc: doc, err: err, stored: now, expires: now.Add(ttl), staleUntil: now.Add(ttl + maxMetadataStale)}
	if err != nil {
		c.expires, c.staleUntil = now.Add(failedMetadataTTL), now.Add(failedMetadataTTL)
		f.observe(lookupFetchFailed)
		f.log.InfoContext(ctx, "client metadata document refused", f.logAttrs(clientID, err)...)
	} else {
		f.observe(lookupFetched)
		if spendShared {
			f.rates.spendShared(ctx, host)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.storeLocked(clientID, c)
	delete(f.flights, clientID)
	fl.doc, fl.err = doc, err
	close(fl.done)
}
