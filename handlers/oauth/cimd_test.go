package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/httprate"
)

// metadataServer serves client metadata documents over TLS on loopback
// and counts the fetches of each path.
type metadataServer struct {
	*httptest.Server
	hits map[string]*atomic.Int32
}

func newMetadataServer(t *testing.T) *metadataServer {
	t.Helper()
	m := &metadataServer{hits: map[string]*atomic.Int32{}}
	doc := func(id string, redirect string) string {
		return fmt.Sprintf(`{"client_id":%q,"client_name":"Doc Client","redirect_uris":[%q],"token_endpoint_auth_method":"none"}`, id, redirect)
	}
	routes := map[string]func(w http.ResponseWriter, r *http.Request){
		"/client.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=60")
			fmt.Fprint(w, doc(m.URL+r.URL.Path, "http://127.0.0.1:9/callback"))
		},
		"/no-store.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, doc(m.URL+r.URL.Path, "http://127.0.0.1:9/callback"))
		},
		"/redirect.json": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/client.json", http.StatusFound)
		},
		"/big.json": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["http://127.0.0.1:9/callback"],"pad":"%s"}`, m.URL+r.URL.Path, strings.Repeat("x", 70<<10))
		},
		"/other-id.json": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, doc("https://elsewhere.example/client.json", "http://127.0.0.1:9/callback"))
		},
		"/javascript.json": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, doc(m.URL+r.URL.Path, "javascript:alert(1)"))
		},
		"/missing.json": func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
	}
	for p := range routes {
		m.hits[p] = &atomic.Int32{}
	}
	m.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		m.hits[r.URL.Path].Add(1)
		h(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *metadataServer) fetcher(hosts []string, loopback bool) *metadataFetcher {
	return newMetadataFetcher(ClientMetadataConfig{
		Hosts: hosts, AllowLoopback: loopback, Ports: []int{m.port()},
		RootCAs: m.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
	}, nil, nil)
}

// port is the metadata server's port, which its fetchers allow.
func (m *metadataServer) port() int { return m.Listener.Addr().(*net.TCPAddr).Port }

// TestClientMetadataGuards pins every refusal of a client_id URL or its
// document, and the one acceptance.
func TestClientMetadataGuards(t *testing.T) {
	m := newMetadataServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		hosts    []string
		loopback bool
		id       string
		want     error
	}{
		{"a listed document", []string{"127.0.0.1"}, true, m.URL + "/client.json", nil},
		{"host not allowlisted", []string{"clients.example"}, true, m.URL + "/client.json", errMetadataHost},
		{"private (loopback) address", []string{"127.0.0.1"}, false, m.URL + "/client.json", errMetadataAddress},
		{"a name that resolves to loopback", []string{"localhost"}, false, strings.Replace(m.URL, "127.0.0.1", "localhost", 1) + "/client.json", errMetadataAddress},
		{"redirect", []string{"127.0.0.1"}, true, m.URL + "/redirect.json", errMetadataRedirect},
		{"oversize", []string{"127.0.0.1"}, true, m.URL + "/big.json", errMetadataTooLarge},
		{"document names another client_id", []string{"127.0.0.1"}, true, m.URL + "/other-id.json", errMetadataDocument},
		{"document lists a javascript: redirect", []string{"127.0.0.1"}, true, m.URL + "/javascript.json", errMetadataDocument},
		{"not found", []string{"127.0.0.1"}, true, m.URL + "/missing.json", errMetadataStatus},
		{"http", []string{"127.0.0.1"}, true, strings.Replace(m.URL, "https:", "http:", 1) + "/client.json", errMetadataURL},
		{"no path", []string{"127.0.0.1"}, true, m.URL + "/", errMetadataURL},
		{"user info", []string{"127.0.0.1"}, true, strings.Replace(m.URL, "https://", "https://u@", 1) + "/client.json", errMetadataURL},
		{"fragment", []string{"127.0.0.1"}, true, m.URL + "/client.json#x", errMetadataURL},
		{"too long", []string{"127.0.0.1"}, true, m.URL + "/" + strings.Repeat("a", maxMetadataURLBytes), errMetadataURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := m.fetcher(tc.hosts, tc.loopback).get(ctx, tc.id)
			if !errors.Is(err, tc.want) || tc.want != nil && err == nil {
				t.Fatalf("get %s: %v, want %v", tc.id, err, tc.want)
			}
			if tc.want == nil && (doc.ClientName != "Doc Client" || len(doc.RedirectURIs) != 1) {
				t.Fatalf("document %+v", doc)
			}
		})
	}
	if n := m.hits["/client.json"].Load(); n != 1 {
		t.Errorf("the redirect was followed or a refused address fetched: /client.json fetched %d times, want 1", n)
	}
	if newMetadataFetcher(ClientMetadataConfig{}, nil, nil) != nil {
		t.Error("no hosts must turn client metadata documents off")
	}
}

// TestClientMetadataPorts: a client_id URL may name port 443 or an
// allowlisted port; any other is refused before its host is resolved, so
// no connection is made and a caller cannot use the gateway to probe
// ports.
func TestClientMetadataPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf("https://127.0.0.1:%d/client.json", port)
	f := newMetadataFetcher(ClientMetadataConfig{Hosts: []string{"127.0.0.1", "clients.example"}, AllowLoopback: true, Ports: []int{8443}}, nil, nil)
	for _, tc := range []struct {
		id   string
		want error
	}{
		{"https://clients.example/client.json", nil},
		{"https://clients.example:443/client.json", nil},
		{"https://clients.example:8443/client.json", nil},
		{"https://clients.example:8080/client.json", errMetadataPort},
		{"https://clients.example:22/client.json", errMetadataPort},
		{probe, errMetadataPort},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if _, err := f.checkURL(tc.id); !errors.Is(err, tc.want) || tc.want != nil && err == nil {
				t.Fatalf("checkURL: %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := f.get(context.Background(), probe); !errors.Is(err, errMetadataPort) {
		t.Fatalf("get of a port not allowed: %v, want %v", err, errMetadataPort)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("a port not allowed was connected to %d times", n)
	}
	// The same port, allowlisted, is connected to (the TLS handshake then
	// fails: the listener is not a TLS server).
	f = newMetadataFetcher(ClientMetadataConfig{Hosts: []string{"127.0.0.1"}, AllowLoopback: true, Ports: []int{port}}, nil, nil)
	if _, err := f.get(context.Background(), probe); err == nil || accepted.Load() == 0 {
		t.Fatalf("an allowlisted port: %v, %d connections", err, accepted.Load())
	}
}

// TestClientMetadataCache: a document is reused while its caching headers
// allow, within [minMetadataTTL, maxMetadataTTL] (no-store: the least),
// and fetched again after.
func TestClientMetadataCache(t *testing.T) {
	m := newMetadataServer(t)
	f := m.fetcher([]string{"127.0.0.1"}, true)
	now := time.Now()
	f.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		if _, err := f.get(ctx, m.URL+"/client.json"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.get(ctx, m.URL+"/no-store.json"); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := m.hits["/client.json"].Load(), m.hits["/no-store.json"].Load(); a != 1 || b != 1 {
		t.Fatalf("fetches: max-age=60 %d, no-store %d; want 1 each", a, b)
	}
	now = now.Add(61 * time.Second)
	for _, p := range []string{"/client.json", "/no-store.json"} {
		if _, err := f.get(ctx, m.URL+p); err != nil {
			t.Fatal(err)
		}
		if n := m.hits[p].Load(); n != 2 {
			t.Fatalf("fetches of %s after a minute: %d, want 2", p, n)
		}
	}
}

// TestClientMetadataFailureCache: a failed fetch is remembered for
// failedMetadataTTL, so asking again for the same client_id is refused
// without a fetch, and fetched again after.
func TestClientMetadataFailureCache(t *testing.T) {
	m := newMetadataServer(t)
	f := m.fetcher([]string{"127.0.0.1"}, true)
	now := time.Now()
	f.now = func() time.Time { return now }
	ctx := context.Background()
	for _, p := range []string{"/missing.json", "/other-id.json"} {
		for i := range 3 {
			if _, err := f.get(ctx, m.URL+p); err == nil {
				t.Fatalf("get %s #%d: no error", p, i)
			}
		}
		if n := m.hits[p].Load(); n != 1 {
			t.Fatalf("a failing %s fetched %d times, want 1", p, n)
		}
	}
	now = now.Add(failedMetadataTTL)
	if _, err := f.get(ctx, m.URL+"/missing.json"); !errors.Is(err, errMetadataStatus) {
		t.Fatalf("after %s: %v", failedMetadataTTL, err)
	}
	if n := m.hits["/missing.json"].Load(); n != 2 {
		t.Fatalf("fetches after the failure expired: %d, want 2", n)
	}
}

// TestClientMetadataSingleFlight: a burst of lookups of one client_id
// while it is being fetched makes one fetch, which every caller gets;
// a caller that gives up does not end the fetch for the others.
func TestClientMetadataSingleFlight(t *testing.T) {
	release := make(chan struct{})
	var fetches atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		<-release
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Slow","redirect_uris":["http://127.0.0.1:9/callback"]}`, srv.URL+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	var shared atomic.Int32
	f := newMetadataFetcher(ClientMetadataConfig{
		Hosts: []string{"127.0.0.1"}, AllowLoopback: true, Ports: []int{srv.Listener.Addr().(*net.TCPAddr).Port},
		RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		Observe: func(result string) {
			if result == lookupShared {
				shared.Add(1)
			}
		},
	}, nil, nil)
	id := srv.URL + "/slow.json"
	const callers = 20
	errs := make(chan error, callers)
	leaving, leave := context.WithCancel(context.Background())
	go func() {
		_, err := f.get(leaving, id)
		errs <- err
	}()
	for range callers - 1 {
		go func() {
			doc, err := f.get(context.Background(), id)
			if err == nil && doc.ClientName != "Slow" {
				err = fmt.Errorf("document %+v", doc)
			}
			errs <- err
		}()
	}
	// Every caller is waiting: on the one fetch, or (without single
	// flight) on fetches of their own.
	for shared.Load() < callers-1 && fetches.Load() < callers {
		time.Sleep(time.Millisecond)
	}
	leave()
	close(release)
	left := 0
	for range callers {
		if err := <-errs; err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
			left++
		}
	}
	if n := fetches.Load(); n != 1 || left > 1 {
		t.Fatalf("%d callers at once made %d fetches (want 1); %d failed (want at most the one that left)", callers, n, left)
	}
}

// TestClientMetadataCacheBound: the cache holds at most
// maxMetadataEntries; when full it drops expired entries, then failures,
// then the oldest document, so cycling through URLs cannot grow it and
// a flood of failures does not push out the documents in use.
func TestClientMetadataCacheBound(t *testing.T) {
	f := newMetadataFetcher(ClientMetadataConfig{Hosts: []string{"clients.example"}}, nil, nil)
	now := time.Now()
	f.now = func() time.Time { return now }
	store := func(id string, err error, ttl time.Duration) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.storeLocked(id, cachedDocument{err: err, stored: f.now(), expires: f.now().Add(ttl), staleUntil: f.now().Add(ttl)})
	}
	store("doc-in-use", nil, time.Hour)
	now = now.Add(time.Second)
	for i := range maxMetadataEntries + 100 {
		store(fmt.Sprintf("failure-%d", i), errMetadataStatus, failedMetadataTTL)
	}
	f.mu.Lock()
	n := len(f.cache)
	_, kept := f.cache["doc-in-use"]
	f.mu.Unlock()
	if n != maxMetadataEntries || !kept {
		t.Fatalf("after a flood of failures: %d entries (want %d), document kept %v", n, maxMetadataEntries, kept)
	}
	for i := range maxMetadataEntries {
		now = now.Add(time.Millisecond)
		store(fmt.Sprintf("doc-%d", i), nil, time.Hour)
	}
	f.mu.Lock()
	_, kept = f.cache["doc-in-use"]
	n = len(f.cache)
	f.mu.Unlock()
	if n != maxMetadataEntries || kept {
		t.Fatalf("after a flood of documents: %d entries (want %d), the oldest kept %v", n, maxMetadataEntries, kept)
	}
	now = now.Add(2 * time.Hour)
	store("late", nil, time.Hour)
	f.mu.Lock()
	n = len(f.cache)
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("expired entries were not dropped: %d entries", n)
	}
}

func TestCacheTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, defaultMetadataTTL},
		{"max-age", http.Header{"Cache-Control": {"public, max-age=120"}}, 2 * time.Minute},
		{"max-age capped", http.Header{"Cache-Control": {"max-age=99999999"}}, maxMetadataTTL},
		{"max-age past int64 nanoseconds", http.Header{"Cache-Control": {"max-age=9223372036854775807"}}, maxMetadataTTL},
		{"max-age raised to the least", http.Header{"Cache-Control": {"max-age=0"}}, minMetadataTTL},
		{"no-store", http.Header{"Cache-Control": {"no-store"}}, minMetadataTTL},
		{"no-cache", http.Header{"Cache-Control": {"no-cache, max-age=600"}}, minMetadataTTL},
		{"bad max-age", http.Header{"Cache-Control": {"max-age=soon"}}, minMetadataTTL},
		{"expires", http.Header{"Expires": {now.Add(time.Hour).Format(http.TimeFormat)}}, time.Hour},
		{"expires in a year", http.Header{"Expires": {now.Add(365 * 24 * time.Hour).Format(http.TimeFormat)}}, maxMetadataTTL},
		{"expired", http.Header{"Expires": {now.Add(-time.Hour).Format(http.TimeFormat)}}, minMetadataTTL},
		{"bad expires", http.Header{"Expires": {"0"}}, minMetadataTTL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cacheTTL(tc.header, now); got != tc.want {
				t.Fatalf("cacheTTL = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPublicAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true}, {"2606:4700::1111", true},
		{"127.0.0.1", false}, {"10.1.2.3", false}, {"172.16.0.1", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"100.64.0.1", false}, {"0.0.0.0", false}, {"255.255.255.255", false},
		{"224.0.0.1", false}, {"198.18.0.1", false}, {"240.0.0.1", false},
		{"::1", false}, {"::", false}, {"fc00::1", false}, {"fe80::1", false}, {"ff02::1", false},
		{"64:ff9b::a00:1", false}, {"2002:a00:1::1", false}, {"2001:db8::1", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := publicAddr(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Fatalf("publicAddr(%s) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
	// An IPv4-mapped private address is checked as IPv4 (dial unmaps).
	f := &metadataFetcher{}
	if f.allowed(netip.MustParseAddr("::ffff:10.0.0.1").Unmap()) {
		t.Fatal("a mapped private address is allowed")
	}
}

// anyDocumentServer serves a valid metadata document at every path and
// counts the fetches.
func anyDocumentServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var fetches atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["http://127.0.0.1:9/callback"]}`, srv.URL+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, &fetches
}

// TestClientMetadataFetchRates: lookups that would fetch spend from their
// client address's rate, then from the total; past either they are
// refused with errMetadataRate and nothing is fetched, while cached
// documents are still served. Fetchers given one counter (Redis, between
// replicas) spend from one rate.
func TestClientMetadataFetchRates(t *testing.T) {
	srv, fetches := anyDocumentServer(t)
	counters := map[string]httprate.LimitCounter{}
	var mu sync.Mutex
	shared := func(limit string) httprate.LimitCounter {
		mu.Lock()
		defer mu.Unlock()
		if counters[limit] == nil {
			counters[limit] = httprate.NewLocalLimitCounter(time.Minute)
		}
		return counters[limit]
	}
	results := map[string]int{}
	newFetcher := func() *metadataFetcher {
		return newMetadataFetcher(ClientMetadataConfig{
			Hosts: []string{"127.0.0.1"}, AllowLoopback: true, Ports: []int{srv.Listener.Addr().(*net.TCPAddr).Port},
			RootCAs:          srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
			FetchesPerMinute: 3, TotalFetchesPerMinute: 5,
			Observe: func(r string) { mu.Lock(); results[r]++; mu.Unlock() },
		}, nil, shared)
	}
	replicas := []*metadataFetcher{newFetcher(), newFetcher()}
	from := func(addr string) context.Context {
		return context.WithValue(context.Background(), fetchAddressKey{}, addr)
	}
	lookups := func(addr string, n int) (refused int) {
		for i := range n {
			_, err := replicas[i%2].get(from(addr), fmt.Sprintf("%s/%s/%d.json", srv.URL, addr, i))
			switch {
			case errors.Is(err, errMetadataRate):
				refused++
			case err != nil:
				t.Fatal(err)
			}
		}
		return refused
	}
	if r := lookups("203.0.113.1", 10); r != 7 || fetches.Load() != 3 {
		t.Fatalf("one address, 10 URLs: %d refused (want 7), %d fetches (want 3)", r, fetches.Load())
	}
	if r := lookups("203.0.113.2", 10); r != 8 || fetches.Load() != 5 {
		t.Fatalf("a second address: %d refused (want 8), %d fetches (want the total, 5)", r, fetches.Load())
	}
	if r := lookups("203.0.113.3", 3); r != 3 || fetches.Load() != 5 {
		t.Fatalf("past the total: %d refused (want 3), %d fetches (want 5)", r, fetches.Load())
	}
	// A document fetched before is served from the cache of the replica
	// that fetched it, rates spent or not.
	if _, err := replicas[0].get(from("203.0.113.1"), srv.URL+"/203.0.113.1/0.json"); err != nil {
		t.Fatalf("a cached document past the rate: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{lookupFetched: 5, lookupRateLimitedAddress: 7 + 7, lookupRateLimitedTotal: 1 + 3, lookupCacheHit: 1}
	for k, n := range want {
		if results[k] != n {
			t.Errorf("observed %s %d times, want %d (%v)", k, results[k], n, results)
		}
	}
}
