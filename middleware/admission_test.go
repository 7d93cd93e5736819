package middleware

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// admissionServer serves h on loopback; readErrs receives the outcome of
// every body read by the terminal handler, which answers 200, the budget's
// refusal, or 400.
func admissionServer(t *testing.T, wrap func(http.Handler) http.Handler) (*httptest.Server, chan error) {
	t.Helper()
	readErrs := make(chan error, 64)
	srv := httptest.NewServer(wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErrs <- err
		switch {
		case err == nil:
			_, _ = io.WriteString(w, "ok")
		case bodyBudgetRefusal(err) != nil:
			Refuse(w, r, bodyBudgetRefusal(err))
		default:
			http.Error(w, "body could not be read", http.StatusBadRequest)
		}
	})))
	t.Cleanup(srv.Close)
	return srv, readErrs
}

// stalledBody opens a connection from source that declares declared body
// bytes and sends only sent of them; the returned channel is closed when
// the server answers or closes the connection.
func stalledBody(t *testing.T, srv *httptest.Server, source string, declared, sent int) <-chan struct{} {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(declared) + "\r\n\r\n" + strings.Repeat("x", sent)
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, io.LimitReader(conn, 1<<20)) // until answered and closed
	}()
	return ended
}

// within waits for ch for up to d and reports whether it came.
func within(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBodyBudgetMinRate: through a real server, a body that sends nothing,
// or stops half way (even after sending far ahead of the rate), is cut by the minimum data rate (its read fails and
// its connection ends within seconds, not at the server's ReadTimeout),
// while a slow body that keeps above the rate completes.
func TestBodyBudgetMinRate(t *testing.T) {
	b := NewBodyBudget(BodyBudgetOptions{Max: 1 << 20, MaxPerIP: 1 << 20, MinRate: 1000, Grace: 300 * time.Millisecond, MaxTime: time.Minute})
	srv, readErrs := admissionServer(t, b.Handler)
	for _, c := range []struct {
		name           string
		declared, sent int
	}{
		{"nothing sent", 100, 0},
		{"stopped half way", 100, 50},
		{"stopped after bytes sent well ahead of the rate", 1 << 20, 1<<20 - 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			ended := stalledBody(t, srv, "127.0.0.2", c.declared, c.sent)
			if !within(ended, 5*time.Second) {
				t.Fatal("the stalled connection was still open after 5 s")
			}
			if err := <-readErrs; err == nil {
				t.Fatal("the stalled body read without error")
			}
			if b.Buffered() != 0 {
				t.Fatalf("%d bytes still reserved", b.Buffered())
			}
		})
	}
	t.Run("slow but above the rate", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			defer pw.Close()
			for range 50 { // 1,500 bytes at about 1,500 bytes a second
				if _, err := io.WriteString(pw, strings.Repeat("y", 30)); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", pr)
		req.ContentLength = 1500
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("slow honest body: %d", resp.StatusCode)
		}
		if err := <-readErrs; err != nil {
			t.Fatal(err)
		}
	})
}

// TestBodyBudgetEvictsStalled: when the budget is full, a newcomer's body
// makes room by evicting the body that has waited longest for its bytes,
// from the address over its fair share; the newcomer is served, the
// oldest stalled connection is closed at once and the younger one stays.
func TestBodyBudgetEvictsStalled(t *testing.T) {
	var evicted []string
	stalls := NewStalls(func(bound string) { evicted = append(evicted, bound) })
	b := NewBodyBudget(BodyBudgetOptions{Max: 100_000, MaxPerIP: 100_000, Stalls: stalls})
	srv, readErrs := admissionServer(t, b.Handler)
	oldest := stalledBody(t, srv, "127.0.0.2", 40_000, 10)
	waitFor(t, "the first stalled body", func() bool { return stalls.Waiting() == 1 })
	younger := stalledBody(t, srv, "127.0.0.2", 40_000, 10)
	waitFor(t, "both stalled bodies", func() bool { return stalls.Waiting() == 2 })
	if got := b.Buffered(); got != 2*bodyStep {
		t.Fatalf("the stalled bodies reserved %d, want one step each", got)
	}

	resp := postFrom(t, srv, "127.0.0.3", strings.Repeat("z", 40_000))
	if resp != http.StatusOK {
		t.Fatalf("the newcomer: %d", resp)
	}
	checkOneEvicted(t, readErrs)
	if !within(oldest, 5*time.Second) {
		t.Fatal("the evicted connection was not closed")
	}
	if within(younger, 100*time.Millisecond) || stalls.Waiting() != 1 {
		t.Fatalf("the younger stalled body was evicted too (%d waiting)", stalls.Waiting())
	}
	if len(evicted) != 1 || evicted[0] != "body_budget" {
		t.Fatalf("evictions %v", evicted)
	}
}

// postFrom posts body to srv from the loopback address source and returns
// the status.
func postFrom(t *testing.T, srv *httptest.Server, source, body string) int {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(srv.URL+"/mcp", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestInFlightEvictsStalled: at the in-flight bound, one address holding
// every place with stalled bodies loses its longest-waiting one to a
// newcomer, who is served; without stalled requests the newcomer is 503.
func TestInFlightEvictsStalled(t *testing.T) {
	stalls := NewStalls(nil)
	f := NewInFlight(InFlightOptions{Max: 4, MaxPerIP: 4, Stalls: stalls})
	b := NewBodyBudget(BodyBudgetOptions{Max: 1 << 20, MaxPerIP: 1 << 20, Stalls: stalls})
	srv, readErrs := admissionServer(t, func(h http.Handler) http.Handler { return f.Handler(b.Handler(h)) })
	var ends []<-chan struct{}
	for i := range 4 {
		ends = append(ends, stalledBody(t, srv, "127.0.0.2", 100, 1))
		waitFor(t, "a stalled request", func() bool { return stalls.Waiting() == i+1 })
	}
	if f.Current() != 4 {
		t.Fatalf("in flight %d", f.Current())
	}
	if code := postFrom(t, srv, "127.0.0.3", "honest"); code != http.StatusOK {
		t.Fatalf("the newcomer: %d", code)
	}
	if !within(ends[0], 5*time.Second) {
		t.Fatal("the longest-stalled request's connection was not closed")
	}
	for _, e := range ends[1:] {
		if within(e, 10*time.Millisecond) {
			t.Fatal("a younger stalled request was evicted too")
		}
	}
	checkOneEvicted(t, readErrs)
	// The newcomer's place is freed as its handler returns, just after
	// its answer reached the client.
	waitFor(t, "three in flight and waiting after the eviction", func() bool { return f.Current() == 3 && stalls.Waiting() == 3 })
}

// checkOneEvicted takes two body-read outcomes, in whichever order they
// came: the evicted body's budget error and the newcomer's success.
func checkOneEvicted(t *testing.T, readErrs chan error) {
	t.Helper()
	checkEvicted(t, readErrs, 1)
}

// checkEvicted takes n+1 body-read outcomes, in whichever order they
// came: n evicted bodies' budget errors and the newcomer's success.
func checkEvicted(t *testing.T, readErrs chan error, n int) {
	t.Helper()
	var evicted, served int
	for range n + 1 {
		err := <-readErrs
		var be *BodyBudgetError
		switch {
		case err == nil:
			served++
		case errors.As(err, &be) && be.Bound == BoundTotal:
			evicted++
		default:
			t.Errorf("read error %v", err)
		}
	}
	if evicted != n || served != 1 {
		t.Fatalf("%d evicted, %d served", evicted, served)
	}
}

// TestInFlightFairShare: past three quarters of the bound, an address over
// its fair share (the bound divided among the addresses in flight) is
// refused 429 while others are still served; at the bound, with nothing
// stalled to evict, the gateway-wide 503.
func TestInFlightFairShare(t *testing.T) {
	f := NewInFlight(InFlightOptions{Max: 8, MaxPerIP: 8})
	hs := newHolders(f.Handler)
	for range 5 {
		hs.from("192.0.2.1")
	}
	hs.from("192.0.2.2")
	// 6 of 8 held: the next is under pressure; 192.0.2.1 holds 5 of a
	// fair share of 4.
	if code := sendFrom("192.0.2.1", f.Handler(mustNotRun(t))); code != http.StatusTooManyRequests {
		t.Fatalf("the heaviest address under pressure: %d, want 429", code)
	}
	hs.from("192.0.2.2")
	hs.from("192.0.2.3")
	if code := sendFrom("192.0.2.4", f.Handler(mustNotRun(t))); code != http.StatusServiceUnavailable {
		t.Fatalf("at the bound: %d, want 503", code)
	}
	hs.end()
	if f.Current() != 0 {
		t.Fatalf("in flight %d", f.Current())
	}
}

// holders hold requests open through a handler until end, so a test can
// fill a bound.
type holders struct {
	started, done sync.WaitGroup
	release       chan struct{}
	hold          http.Handler
}

// newHolders holds requests in the handler wrap makes around a blocking
// one.
func newHolders(wrap func(http.Handler) http.Handler) *holders {
	hs := &holders{release: make(chan struct{})}
	hs.hold = wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hs.started.Done(); <-hs.release }))
	return hs
}

// from holds one request from ip, returning once it is being served.
func (hs *holders) from(ip string) {
	hs.started.Add(1)
	hs.done.Add(1)
	go func() { defer hs.done.Done(); sendFrom(ip, hs.hold) }()
	hs.started.Wait()
}

// end lets every held request finish.
func (hs *holders) end() {
	close(hs.release)
	hs.done.Wait()
}

// sendFrom makes one request from ip through h and returns its status.
func sendFrom(ip string, h http.Handler) int {
	r, rec := newReq(http.MethodPost, "/mcp", nil)
	setFrom(rec, ip)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// TestInFlightReserve: past authentication, requests without a verified
// principal hold at most Max − Reserve places; a verified principal is
// served past that, and so is anyone once places are free again.
func TestInFlightReserve(t *testing.T) {
	f := NewInFlight(InFlightOptions{Max: 4, MaxPerIP: 4, Reserve: 1})
	release := make(chan struct{})
	var started, done sync.WaitGroup
	hold := f.Reserved(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { started.Done(); <-release }))
	send := func(p *Principal, h http.Handler) int {
		r, _ := newReq(http.MethodPost, "/mcp", nil)
		if p != nil {
			r = r.WithContext(WithPrincipal(r.Context(), p))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, p := range []*Principal{nil, NewPassthrough("forgejo-token"), nil} {
		started.Add(1)
		done.Add(1)
		go func() { defer done.Done(); send(p, hold) }()
		started.Wait()
	}
	if code := send(nil, f.Reserved(mustNotRun(t))); code != http.StatusServiceUnavailable {
		t.Fatalf("anonymous past Max − Reserve: %d, want 503", code)
	}
	if code := send(NewPassthrough("another"), f.Reserved(mustNotRun(t))); code != http.StatusServiceUnavailable {
		t.Fatalf("an unverified Forgejo bearer past Max − Reserve: %d, want 503", code)
	}
	if code := send(&Principal{Kind: OAuthConsent, Key: "c1"}, f.Reserved(ok)); code != http.StatusOK {
		t.Fatalf("a verified principal: %d, want 200", code)
	}
	close(release)
	done.Wait()
	if code := send(nil, f.Reserved(ok)); code != http.StatusOK {
		t.Fatalf("anonymous with places free: %d", code)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a reserve of the whole bound did not panic")
		}
	}()
	NewInFlight(InFlightOptions{Max: 4, MaxPerIP: 4, Reserve: 4})
}

// TestTallyFairShare pins the fair share: the bound divided among the keys
// holding something, the asker included, applied past three quarters.
func TestTallyFairShare(t *testing.T) {
	tl := newTally(100, 100)
	if b := tl.acquire("a", 75); b != withinBounds {
		t.Fatalf("below the pressure line: %v", b)
	}
	if b := tl.acquire("a", 1); b != withinBounds {
		t.Fatalf("alone, its fair share is the bound: %v", b)
	}
	if b := tl.acquire("b", 1); b != withinBounds {
		t.Fatalf("a newcomer within its share of 50: %v", b)
	}
	if b := tl.acquire("a", 1); b != BoundPerIP {
		t.Fatalf("76 held of a share of 50: %v", b)
	}
	if !tl.overShare("a") || tl.overShare("b") {
		t.Fatal("overShare")
	}
	if b := tl.acquire("b", 23); b != withinBounds {
		t.Fatalf("b to the bound: %v", b)
	}
	if b := tl.acquire("c", 1); b != BoundTotal {
		t.Fatalf("at the bound: %v", b)
	}
}

// TestBodyBudgetWholeBodyKeepsTheCall: once the body has all arrived, the
// minimum data rate no longer applies. A handler that works for longer
// than Grace after reading its body (a diff page whose evidence trickles
// in) keeps its request context and answers; a deadline left on the
// connection would cut net/http's background read and cancel it.
func TestBodyBudgetWholeBodyKeepsTheCall(t *testing.T) {
	const grace = 200 * time.Millisecond
	b := NewBodyBudget(BodyBudgetOptions{Max: 1 << 20, MaxPerIP: 1 << 20, MinRate: 1000, Grace: grace, MaxTime: time.Minute})
	for _, c := range []struct {
		name    string
		chunked bool
	}{{"declared length", false}, {"chunked", true}} {
		t.Run(c.name, func(t *testing.T) {
			ctxErr := make(chan error, 1)
			srv := httptest.NewServer(b.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err != nil {
					t.Error(err)
				}
				select {
				case <-r.Context().Done():
				case <-time.After(4 * grace):
				}
				ctxErr <- r.Context().Err()
				_, _ = io.WriteString(w, "answered")
			})))
			defer srv.Close()
			var body io.Reader = strings.NewReader(`{"jsonrpc":"2.0"}`)
			if c.chunked {
				body = io.MultiReader(body) // no length known: sent chunked
			}
			resp, err := http.Post(srv.URL+"/mcp", "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := <-ctxErr; err != nil {
				t.Fatalf("the request's context ended %v after its body was read: %v", 4*grace, err)
			}
			if string(out) != "answered" {
				t.Fatalf("answer %q", out)
			}
		})
	}
}

// TestInFlightEvictsUntilRoom: the place an eviction frees is anyone's, and
// another request may take it before the evictor asks again (an honest
// diff page was refused 503 so in an 8-address abuse run, at the moment
// three evictions were made). The newcomer then evicts the next stalled
// request rather than being refused: it is served while anything stalled
// is left to evict.
func TestInFlightEvictsUntilRoom(t *testing.T) {
	stalls := NewStalls(nil)
	f := NewInFlight(InFlightOptions{Max: 4, MaxPerIP: 4, Stalls: stalls})
	// An attacker holds every place, two of them waiting for their bytes;
	// evicting the older frees its place, and at that instant another
	// request (a thief from a third address) takes it.
	for range 4 {
		if b := f.t.acquire("192.0.2.1", 1); b != withinBounds {
			t.Fatalf("filling the bound: %v", b)
		}
	}
	var evicted []string
	victim := func(name string, then func()) func() {
		return func() {
			evicted = append(evicted, name)
			f.t.release("192.0.2.1", 1)
			then()
		}
	}
	start := time.Now()
	stalls.add("192.0.2.1", start, victim("oldest", func() {
		if b := f.t.acquire("192.0.2.9", 1); b != withinBounds {
			t.Errorf("the thief: %v", b)
		}
	}))
	stalls.add("192.0.2.1", start.Add(time.Second), victim("younger", func() {}))

	if code := sendFrom("192.0.2.3", f.Handler(ok)); code != http.StatusOK {
		t.Fatalf("the newcomer, its first freed place taken: %d, want 200", code)
	}
	if strings.Join(evicted, ",") != "oldest,younger" || stalls.Waiting() != 0 {
		t.Fatalf("evicted %v, %d still waiting", evicted, stalls.Waiting())
	}
	// Nothing stalled is left: the next newcomer at the bound is refused.
	if b := f.t.acquire("192.0.2.9", 1); b != withinBounds {
		t.Fatalf("refilling: %v", b)
	}
	if code := sendFrom("192.0.2.4", f.Handler(mustNotRun(t))); code != http.StatusServiceUnavailable {
		t.Fatalf("at the bound with nothing stalled: %d, want 503", code)
	}
}

// TestBodyBudgetEvictsUntilRoom: through a real server, when the oldest
// stalled body holds fewer bytes than a newcomer needs (a stalled 100-byte
// request beside stalled 1 MiB bodies), the newcomer evicts the next one
// too and is served, rather than being refused after freeing too little.
func TestBodyBudgetEvictsUntilRoom(t *testing.T) {
	var evicted []string
	stalls := NewStalls(func(bound string) { evicted = append(evicted, bound) })
	// Room for the small stalled body and two steps of large ones, exactly.
	b := NewBodyBudget(BodyBudgetOptions{Max: 100 + 2*bodyStep, MaxPerIP: 1 << 20, Stalls: stalls})
	srv, readErrs := admissionServer(t, b.Handler)
	small := stalledBody(t, srv, "127.0.0.2", 100, 10)
	waitFor(t, "the small stalled body", func() bool { return stalls.Waiting() == 1 })
	var large []<-chan struct{}
	for i := range 2 {
		large = append(large, stalledBody(t, srv, "127.0.0.2", 1<<20, 10))
		waitFor(t, "a large stalled body", func() bool { return stalls.Waiting() == 2+i })
	}
	if got := b.Buffered(); got != 100+2*bodyStep {
		t.Fatalf("the stalled bodies reserved %d, want the whole budget", got)
	}

	if code := postFrom(t, srv, "127.0.0.3", strings.Repeat("z", 500)); code != http.StatusOK {
		t.Fatalf("the newcomer: %d, want 200", code)
	}
	if !within(small, 5*time.Second) || !within(large[0], 5*time.Second) {
		t.Fatal("the two longest-stalled connections were not both closed")
	}
	if within(large[1], 100*time.Millisecond) || stalls.Waiting() != 1 {
		t.Fatalf("the youngest stalled body was evicted too (%d waiting)", stalls.Waiting())
	}
	if strings.Join(evicted, ",") != "body_budget,body_budget" {
		t.Fatalf("evictions %v", evicted)
	}
	checkEvicted(t, readErrs, 2)
}

// TestInFlightEvictsBeforeTheFirstRead: a request is evictable from the
// moment it holds a place, not only once its handler blocks in a read. A
// wave of stalled requests that fills the in-flight bound before any of
// them has reached its first read (here held at a gate in front of the
// reading handler) still yields its longest-waiting member to a newcomer,
// whose call is served; the evicted request's read then fails.
func TestInFlightEvictsBeforeTheFirstRead(t *testing.T) {
	stalls := NewStalls(nil)
	f := NewInFlight(InFlightOptions{Max: 4, MaxPerIP: 4, Stalls: stalls})
	b := NewBodyBudget(BodyBudgetOptions{Max: 1 << 20, MaxPerIP: 1 << 20, Stalls: stalls})
	gate, gated := make(chan struct{}), make(chan struct{}, 4)
	var open sync.Once
	openGate := func() { open.Do(func() { close(gate) }) }
	srv, readErrs := admissionServer(t, func(h http.Handler) http.Handler {
		return f.Handler(b.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.RemoteAddr, "127.0.0.2:") {
				gated <- struct{}{}
				<-gate
			}
			h.ServeHTTP(w, r)
		})))
	})
	t.Cleanup(openGate) // before the server's: its Close waits for the gated
	var ends []<-chan struct{}
	for range 4 {
		ends = append(ends, stalledBody(t, srv, "127.0.0.2", 100, 0))
		<-gated
	}
	if f.Current() != 4 || b.Buffered() != 0 {
		t.Fatalf("%d in flight, %d bytes reserved before any read", f.Current(), b.Buffered())
	}
	if code := postFrom(t, srv, "127.0.0.3", "honest"); code != http.StatusOK {
		t.Fatalf("the newcomer: %d, want 200", code)
	}
	openGate()
	checkOneEvicted(t, readErrs)
	if !within(ends[0], 5*time.Second) {
		t.Fatal("the evicted request's connection was not closed")
	}
	// The newcomer's place is freed as its handler returns, just after
	// its answer reached the client.
	waitFor(t, "three in flight and waiting after the eviction", func() bool { return f.Current() == 3 && stalls.Waiting() == 3 })
}
