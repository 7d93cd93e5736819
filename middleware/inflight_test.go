package middleware

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestInFlight: with 2 per IP and 3 in all, requests are held open: the
// second of one IP is at the limit and served, its third is 429; another
// IP fills the total, and a third IP is 503; exempt paths pass anyway; a
// finished request frees its place.
func TestInFlight(t *testing.T) {
	var refused []string
	f := NewInFlight(InFlightOptions{Max: 3, MaxPerIP: 2, Exempt: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
		Refused: func(b string) { refused = append(refused, b) }})
	release := make(chan struct{})
	var started sync.WaitGroup
	var done sync.WaitGroup
	hold := f.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { started.Done(); <-release }))
	send := func(ip, path string, h http.Handler) *httptest.ResponseRecorder {
		r, rec := newReq(http.MethodPost, path, nil)
		setFrom(rec, ip)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	holdFrom := func(ip string) {
		started.Add(1)
		done.Add(1)
		go func() { defer done.Done(); send(ip, "/mcp", hold) }()
		started.Wait()
	}
	holdFrom("192.0.2.1")
	holdFrom("192.0.2.1") // at the per-IP limit: served
	if f.Current() != 2 {
		t.Fatalf("in flight %d", f.Current())
	}
	w := send("192.0.2.1", "/mcp", f.Handler(mustNotRun(t)))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" || errorBody(t, w.Body.String())["bound"] != "in_flight_per_ip" {
		t.Fatalf("one over the IP's share: %d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	holdFrom("192.0.2.2") // at the total limit: served
	w = send("192.0.2.3", "/mcp", f.Handler(mustNotRun(t)))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || errorBody(t, w.Body.String())["code"] != "overloaded" {
		t.Fatalf("one over the total: %d %s", w.Code, w.Body.String())
	}
	if w := send("192.0.2.3", "/healthz", f.Handler(ok)); w.Code != http.StatusOK {
		t.Fatalf("exempt path: %d", w.Code)
	}
	close(release)
	done.Wait()
	if f.Current() != 0 {
		t.Fatalf("in flight after release: %d", f.Current())
	}
	if w := send("192.0.2.3", "/mcp", f.Handler(ok)); w.Code != http.StatusOK {
		t.Fatalf("after release: %d", w.Code)
	}
	if len(refused) != 2 || refused[0] != "in_flight_per_ip" || refused[1] != "in_flight" {
		t.Fatalf("refused = %v", refused)
	}
}

func TestTallyForgetsIdleAddresses(t *testing.T) {
	tl := newTally(10, 5)
	if b := tl.acquire("a", 5); b != withinBounds {
		t.Fatal(b)
	}
	if b := tl.acquire("a", 1); b != BoundPerIP {
		t.Fatalf("one over the share: %v", b)
	}
	tl.release("a", 5)
	if len(tl.perIP) != 0 || tl.held() != 0 {
		t.Fatalf("after release: %v %d", tl.perIP, tl.held())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a zero bound did not panic")
		}
	}()
	newTally(0, 1)
}

// TestInFlightIPv6Prefix: requests from different addresses of one /64
// share the address's share of requests in flight; the next /64 has its
// own.
func TestInFlightIPv6Prefix(t *testing.T) {
	f := NewInFlight(InFlightOptions{Max: 10, MaxPerIP: 2})
	hs := newHolders(f.Handler)
	hs.from("2001:db8:1:2::1")
	hs.from("2001:db8:1:2::2")
	if code := sendFrom("2001:db8:1:2:ffff::3", f.Handler(mustNotRun(t))); code != http.StatusTooManyRequests {
		t.Errorf("a third address of the /64: %d, want 429", code)
	}
	if code := sendFrom("2001:db8:1:3::1", f.Handler(ok)); code != http.StatusOK {
		t.Errorf("the next /64: %d, want 200", code)
	}
	hs.end()
}
