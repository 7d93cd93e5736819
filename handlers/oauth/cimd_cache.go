package oauth

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// store caches a document for ttl, within maxMetadataEntries.
func (f *metadataFetcher) store(clientID string, doc clientDocument, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ttl <= 0 {
		delete(f.cache, clientID)
		return
	}
	now := f.now()
	if len(f.cache) >= maxMetadataEntries {
		for k, c := range f.cache {
			if !now.Before(c.expires) {
				delete(f.cache, k)
			}
		}
	}
	if _, ok := f.cache[clientID]; ok || len(f.cache) < maxMetadataEntries {
		f.cache[clientID] = cachedDocument{doc: doc, expires: now.Add(ttl)}
	}
}

// cacheTTL is how long an answer may be reused under its Cache-Control
// (no-store and no-cache: not at all; max-age) or Expires header, capped at
// maxMetadataTTL; without either, defaultMetadataTTL.
func cacheTTL(h http.Header, now time.Time) time.Duration {
	if cc := h.Get("Cache-Control"); cc != "" {
		for _, d := range strings.Split(cc, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
			switch name {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				n, err := strconv.Atoi(strings.Trim(val, `"`))
				if err != nil || n < 0 {
					return 0
				}
				return min(time.Duration(n)*time.Second, maxMetadataTTL)
			}
		}
	}
	if e := h.Get("Expires"); e != "" {
		t, err := http.ParseTime(e)
		if err != nil {
			return 0
		}
		return min(max(t.Sub(now), 0), maxMetadataTTL)
	}
	return defaultMetadataTTL
}
