package oauth

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The cache of client metadata documents keeps what each fetch found, a
// failure as well as a document, so asking again for one client_id costs
// no fetch until its entry expires: a document for as long as its caching
// headers say within [minMetadataTTL, maxMetadataTTL], a failure for
// failedMetadataTTL. It is bounded in entries, and only fetches add
// entries, which the rates bound; when it is full the oldest failure goes
// first, then the oldest document, so URLs an attacker cycles through
// cannot grow it or push out for long the documents clients use.

// Cache lifetimes and size.
const (
	// minMetadataTTL is the least a document is kept, whatever its
	// headers say (no-store and no-cache included): without it every
	// token request of such a client would be a fetch.
	minMetadataTTL = time.Minute
	// defaultMetadataTTL is how long a document without caching headers
	// is kept; maxMetadataTTL caps what headers may ask for.
	defaultMetadataTTL = 5 * time.Minute
	maxMetadataTTL     = 24 * time.Hour
	// failedMetadataTTL is how long a failed fetch is remembered.
	failedMetadataTTL  = time.Minute
	maxMetadataEntries = 1024
	// maxMetadataStale is how long past its expiry a known-good document
	// is kept, to be served while no revalidation may be made.
	maxMetadataStale = 24 * time.Hour
)

// cachedDocument is what one fetch of a client_id found.
type cachedDocument struct {
	doc     clientDocument
	err     error // the fetch failed; doc is empty
	stored  time.Time
	expires time.Time
	// staleUntil is when the entry goes: a document's expiry plus
	// maxMetadataStale, a failure's expiry.
	staleUntil time.Time
}

// storeLocked caches one fetch's result, making room when the cache is
// full; f.mu must be held.
func (f *metadataFetcher) storeLocked(clientID string, c cachedDocument) {
	if _, ok := f.cache[clientID]; !ok && len(f.cache) >= maxMetadataEntries {
		f.evictLocked(c.stored)
	}
	f.cache[clientID] = c
}

// evictLocked drops every entry past its staleUntil and, if that freed
// nothing, the oldest failure, or without one the oldest document.
func (f *metadataFetcher) evictLocked(now time.Time) {
	victim, found := "", false
	for k, c := range f.cache {
		if !now.Before(c.staleUntil) {
			delete(f.cache, k)
			continue
		}
		if v := f.cache[victim]; !found || evictsBefore(c, v) {
			victim, found = k, true
		}
	}
	if found && len(f.cache) >= maxMetadataEntries {
		delete(f.cache, victim)
	}
}

// evictsBefore orders entries for eviction: failures before documents,
// older before newer.
func evictsBefore(a, b cachedDocument) bool {
	if (a.err != nil) != (b.err != nil) {
		return a.err != nil
	}
	return a.stored.Before(b.stored)
}

// cacheTTL is how long a document may be reused under its Cache-Control
// (max-age; no-store and no-cache: the least) or Expires header, within
// [minMetadataTTL, maxMetadataTTL]; without either, defaultMetadataTTL.
func cacheTTL(h http.Header, now time.Time) time.Duration {
	clamp := func(d time.Duration) time.Duration { return min(max(d, minMetadataTTL), maxMetadataTTL) }
	if cc := h.Get("Cache-Control"); cc != "" {
		for _, d := range strings.Split(cc, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
			switch name {
			case "no-store", "no-cache":
				return minMetadataTTL
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
				if err != nil || n < 0 {
					return minMetadataTTL
				}
				return clamp(time.Duration(min(n, int64(maxMetadataTTL/time.Second))) * time.Second)
			}
		}
	}
	if e := h.Get("Expires"); e != "" {
		t, err := http.ParseTime(e)
		if err != nil {
			return minMetadataTTL
		}
		return clamp(t.Sub(now))
	}
	return defaultMetadataTTL
}
