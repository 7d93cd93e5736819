package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// poolsServer serves a valid document at every path but those under
// /junk/, which are 404, and counts the fetches of each kind.
func poolsServer(t *testing.T) (*httptest.Server, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	var good, junk atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/junk/") {
			junk.Add(1)
			http.NotFound(w, r)
			return
		}
		good.Add(1)
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["http://127.0.0.1:9/callback"]}`, srv.URL+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, &good, &junk
}

// poolsFetcher is a fetcher of srv's documents with small rates that
// records every Observe result.
func poolsFetcher(srv *httptest.Server, perAddress, perHost, total int) (*metadataFetcher, func() map[string]int) {
	var mu sync.Mutex
	results := map[string]int{}
	f := newMetadataFetcher(ClientMetadataConfig{
		Hosts: []string{"127.0.0.1"}, AllowLoopback: true, Ports: []int{srv.Listener.Addr().(*net.TCPAddr).Port},
		RootCAs:          srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		FetchesPerMinute: perAddress, HostFetchesPerMinute: perHost, TotalFetchesPerMinute: total,
		Observe: func(r string) { mu.Lock(); results[r]++; mu.Unlock() },
	}, nil, nil)
	return f, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range results {
			out[k] = v
		}
		return out
	}
}

func fromAddress(addr string) context.Context {
	return context.WithValue(context.Background(), fetchAddressKey{}, addr)
}

// TestClientMetadataJunkSpendsOnlyOwnRate: failing URLs from many
// addresses, each within its own rate, are fetched and refused without
// spending the host's budget or the total, so a real client's first
// document is still fetched; usable documents do spend them, and past the
// host's budget a new document is refused rate_limited_host.
func TestClientMetadataJunkSpendsOnlyOwnRate(t *testing.T) {
	srv, good, junk := poolsServer(t)
	f, results := poolsFetcher(srv, 3, 2, 5)
	for a := range 20 {
		for i := range 3 {
			_, err := f.get(fromAddress(fmt.Sprintf("203.0.113.%d", a)), fmt.Sprintf("%s/junk/%d-%d.json", srv.URL, a, i))
			if err == nil || errors.Is(err, errMetadataRate) {
				t.Fatalf("junk %d-%d: %v, want a fetch failure", a, i, err)
			}
		}
	}
	if junk.Load() != 60 {
		t.Fatalf("junk fetches %d, want 60 (each address its own 3)", junk.Load())
	}
	for i := range 2 {
		if _, err := f.get(fromAddress(fmt.Sprintf("198.51.100.%d", i)), fmt.Sprintf("%s/client-%d.json", srv.URL, i)); err != nil {
			t.Fatalf("a real client's document after the junk: %v", err)
		}
	}
	_, err := f.get(fromAddress("198.51.100.9"), srv.URL+"/client-9.json")
	if !errors.Is(err, errMetadataRate) || !strings.Contains(errors.Unwrap(err).Error(), "from this host") {
		t.Fatalf("a third new document from the host: %v, want its budget refused", err)
	}
	if good.Load() != 2 {
		t.Fatalf("good fetches %d, want 2", good.Load())
	}
	want := map[string]int{lookupFetchFailed: 60, lookupFetched: 2, lookupRateLimitedHost: 1}
	for k, n := range want {
		if results()[k] != n {
			t.Errorf("observed %s %d times, want %d (%v)", k, results()[k], n, results())
		}
	}
	// The budgets are per host: another host's are untouched.
	if _, full := f.rates.roomFor("other.example"); full != nil {
		t.Fatalf("another host: %v", full)
	}
}

// TestClientMetadataStaleWhilePoolsEmpty: an expired known-good document
// is served stale, with no fetch, while the shared pools are empty or the
// caller's own rate is spent; with room, it is revalidated by a fetch that
// spends neither the host's budget nor the total.
func TestClientMetadataStaleWhilePoolsEmpty(t *testing.T) {
	srv, good, _ := poolsServer(t)
	f, results := poolsFetcher(srv, 10, 2, 2)
	now := time.Now()
	var mu sync.Mutex
	f.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := fromAddress("198.51.100.1")
	known := srv.URL + "/known.json"
	if _, err := f.get(ctx, known); err != nil {
		t.Fatal(err)
	}
	if _, err := f.get(ctx, srv.URL+"/second.json"); err != nil { // the pools are now empty
		t.Fatal(err)
	}
	advance(defaultMetadataTTL + time.Second)
	doc, err := f.get(ctx, known)
	if err != nil || doc.ClientID != known || good.Load() != 2 || results()[lookupStale] != 1 {
		t.Fatalf("expired, pools empty: %+v %v, %d fetches, %v", doc, err, good.Load(), results())
	}
	// The caller's own rate spent: stale too.
	g, _ := poolsFetcher(srv, 1, 10, 10)
	g.now = f.now
	if _, err := g.get(ctx, known); err != nil {
		t.Fatal(err)
	}
	advance(defaultMetadataTTL + time.Second)
	if doc, err := g.get(ctx, known); err != nil || doc.ClientID != known || good.Load() != 3 {
		t.Fatalf("expired, own rate spent: %+v %v, %d fetches", doc, err, good.Load())
	}
	// With room in the pools (one of two spent), a revalidation fetches
	// and spends neither: one is still left after it.
	h, hres := poolsFetcher(srv, 10, 2, 2)
	h.now = f.now
	if _, err := h.get(ctx, known); err != nil {
		t.Fatal(err)
	}
	advance(defaultMetadataTTL + time.Second)
	before := good.Load()
	if _, err := h.get(ctx, known); err != nil || good.Load() != before+1 || hres()[lookupFetched] != 2 {
		t.Fatalf("revalidation: %v, %d fetches, %v", err, good.Load()-before, hres())
	}
	if _, full := h.rates.roomFor("127.0.0.1"); full != nil {
		t.Fatalf("the revalidation spent a shared pool: %v", full)
	}
}
