package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// fakeClock is a settable now for the counts that drain with time.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// TestAddressResets: a key is cut off on the stream that takes its net
// resets past the allowance, once; completions offset resets but bank no
// credit; the count drains; the cut-off ends; the empty key is never
// counted; past the bound on keys a new key is not counted until drained
// keys can be dropped.
func TestAddressResets(t *testing.T) {
	const allowance = 5
	newCount := func(maxKeys int) (*AddressResets, *fakeClock) {
		c := &fakeClock{t: time.Unix(1_000_000, 0)}
		return newAddressResets(allowance, 1, time.Minute, maxKeys, c.now), c
	}
	// resets sends n resets of key and returns how many cut it off and the
	// net of the last cut.
	resets := func(a *AddressResets, key string, n int) (cuts, net int) {
		for range n {
			if cut, m := a.Stream(key, true); cut {
				cuts, net = cuts+1, m
			}
		}
		return cuts, net
	}
	cutOff := func(a *AddressResets, key string) bool { _, cut := a.CutOff(key); return cut }

	t.Run("at the allowance, then one past", func(t *testing.T) {
		a, _ := newCount(16)
		if cuts, _ := resets(a, "192.0.2.1", allowance); cuts != 0 || cutOff(a, "192.0.2.1") {
			t.Fatal("cut off at the allowance")
		}
		if cuts, net := resets(a, "192.0.2.1", 1); cuts != 1 || net != allowance+1 || !cutOff(a, "192.0.2.1") {
			t.Fatalf("one past the allowance: %d cuts (net %d), cut off %v", cuts, net, cutOff(a, "192.0.2.1"))
		}
		if cuts, _ := resets(a, "192.0.2.1", 100); cuts != 0 {
			t.Fatal("a key already cut off was cut off again")
		}
		if cutOff(a, "192.0.2.2") {
			t.Fatal("another key is cut off")
		}
	})
	t.Run("completions offset resets but bank nothing", func(t *testing.T) {
		a, _ := newCount(16)
		for range 1000 {
			a.Stream("192.0.2.1", false)
		}
		if cuts, _ := resets(a, "192.0.2.1", allowance+1); cuts != 1 {
			t.Fatal("completions before any reset bought resets")
		}
		a2, _ := newCount(16)
		resets(a2, "k", allowance)
		a2.Stream("k", false)
		if cuts, _ := resets(a2, "k", 1); cuts != 0 {
			t.Fatal("a completion did not offset a reset")
		}
		if cuts, _ := resets(a2, "k", 1); cuts != 1 {
			t.Fatal("not cut off one past the allowance after the offset")
		}
	})
	t.Run("the count drains", func(t *testing.T) {
		a, clock := newCount(16)
		resets(a, "192.0.2.1", allowance)
		clock.advance(3 * time.Second)
		if cuts, _ := resets(a, "192.0.2.1", 3); cuts != 0 {
			t.Fatal("cut off though three resets had drained")
		}
		if cuts, _ := resets(a, "192.0.2.1", 1); cuts != 1 {
			t.Fatal("not cut off past the allowance after the drain")
		}
	})
	t.Run("the cut-off ends and counting starts afresh", func(t *testing.T) {
		a, clock := newCount(16)
		resets(a, "2001:db8::/64", allowance+1)
		if left, cut := a.CutOff("2001:db8::/64"); !cut || left != time.Minute {
			t.Fatalf("cut off %v for %v, want a minute", cut, left)
		}
		clock.advance(time.Minute)
		if cutOff(a, "2001:db8::/64") {
			t.Fatal("still cut off after the cut-off")
		}
		if cuts, _ := resets(a, "2001:db8::/64", allowance); cuts != 0 {
			t.Fatal("the resets before the cut-off were counted again")
		}
	})
	t.Run("the empty key is not counted", func(t *testing.T) {
		a, _ := newCount(16)
		if cuts, _ := resets(a, "", 100); cuts != 0 || cutOff(a, "") {
			t.Fatal("the empty key was cut off")
		}
	})
	t.Run("bounded in keys", func(t *testing.T) {
		a, clock := newCount(4)
		for i := range 4 {
			resets(a, fmt.Sprint("192.0.2.", i), 1)
		}
		if cuts, _ := resets(a, "198.51.100.1", 100); cuts != 0 || len(a.keys) != 4 {
			t.Fatalf("past the bound: %d cuts, %d keys", cuts, len(a.keys))
		}
		// The four have drained after a second: dropped to make room.
		clock.advance(time.Second)
		if cuts, _ := resets(a, "198.51.100.1", allowance+1); cuts != 1 || len(a.keys) != 1 {
			t.Fatalf("after the drain: %d cuts, %d keys", cuts, len(a.keys))
		}
		// A cut-off key is kept however full the bound is.
		for i := range 3 {
			resets(a, fmt.Sprint("192.0.2.", i), 1)
		}
		clock.advance(2 * time.Second)
		resets(a, "203.0.113.1", 1)
		if !cutOff(a, "198.51.100.1") {
			t.Fatal("a cut-off key was dropped to make room")
		}
	})
}

// TestResetGuardPerAddress: connections of one address that each stay
// within the per-connection allowance are cut off together once the
// address's net resets pass its allowance: the connection that took it
// past is closed, a new connection's stream is not served and the
// connection closed, while another address is served. A trusted proxy's
// connection carrying the cut-off client is kept, and the client's stream
// answered 429 with Retry-After.
func TestResetGuardPerAddress(t *testing.T) {
	const perConn, perAddr = 10, 25
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	addrs := newAddressResets(perAddr, 1, time.Minute, 16, clock.now)
	var cuts, refusals int
	served := 0
	guard := ResetGuard(ResetGuardOptions{Allowance: perConn, Addresses: addrs,
		CutOff:  func(*http.Request, int) { cuts++ },
		Refused: func(bound string) { refusals++ },
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	proxy := netip.MustParsePrefix("192.0.2.100/32")
	h := ClientIP([]netip.Prefix{proxy}, 0)(guard)

	// conn is one connection: a pipe and its ledger.
	type conn struct {
		client, server net.Conn
		ctx            context.Context
	}
	open := func(t *testing.T) conn {
		c, s := net.Pipe()
		t.Cleanup(func() { c.Close() })
		return conn{c, s, WithStreamLedger(context.Background(), s)}
	}
	// stream serves one HTTP/2 stream from peer on c, reset or not,
	// optionally forwarded for xff, and returns the answer.
	stream := func(c conn, peer, xff string, reset bool) *httptest.ResponseRecorder {
		ctx, cancel := context.WithCancel(WithRecord(c.ctx, &Record{}))
		if reset {
			cancel()
		}
		defer cancel()
		r := httptest.NewRequest(http.MethodPost, "/mcp/forgejo", nil).WithContext(ctx)
		r.ProtoMajor, r.RemoteAddr = 2, peer+":4000"
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	isClosed := func(c conn) bool {
		_ = c.server.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := c.server.Write([]byte{0})
		return errors.Is(err, io.ErrClosedPipe)
	}

	// Three connections of 198.51.100.7 reset perConn each (none is closed
	// by its own allowance); the third takes the address past perAddr on
	// its sixth stream, and its last four are refused.
	var attacker []conn
	for range 3 {
		c := open(t)
		attacker = append(attacker, c)
		for range perConn {
			stream(c, "198.51.100.7", "", true)
		}
	}
	if cuts != 1 || !isClosed(attacker[2]) {
		t.Fatalf("%d cut-offs, last connection closed %v; want the address cut off and that connection closed", cuts, isClosed(attacker[2]))
	}
	if isClosed(attacker[0]) {
		t.Fatal("an earlier connection within its own allowance was closed before it sent again")
	}
	if refusals != perConn-(perAddr+1-2*perConn) {
		t.Fatalf("%d streams refused after the cut-off on the connection that made it", refusals)
	}
	before, refusedBefore := served, refusals
	fresh := open(t)
	stream(fresh, "198.51.100.7", "", false)
	if served != before || !isClosed(fresh) || refusals != refusedBefore+1 {
		t.Fatalf("a cut-off address's new connection: served %v, closed %v, %d refusals", served != before, isClosed(fresh), refusals-refusedBefore)
	}
	stream(attacker[0], "198.51.100.7", "", false)
	if !isClosed(attacker[0]) {
		t.Fatal("a cut-off address's open connection was not closed on its next stream")
	}
	honest := open(t)
	if stream(honest, "203.0.113.9", "", false); served != before+1 || isClosed(honest) {
		t.Fatal("another address was not served")
	}

	// Streams that end after the gateway closed their connection (those in
	// flight when it closed) are not the client's resets.
	closedOwn := open(t)
	for range perConn + 1 + 50 {
		stream(closedOwn, "198.51.100.9", "", true)
	}
	if _, cut := addrs.CutOff("198.51.100.9"); cut || !isClosed(closedOwn) || cuts != 1 {
		t.Fatalf("streams ended by the gateway's close were counted against the address (cut off %v)", cut)
	}

	// Through the trusted proxy (three of its connections, each within its
	// own allowance): the forwarded client is cut off, the proxy's
	// connection stays.
	var viaProxy conn
	for range 3 {
		viaProxy = open(t)
		for range perConn - 1 {
			stream(viaProxy, "192.0.2.100", "198.51.100.8", true)
		}
	}
	if cuts != 2 || isClosed(viaProxy) {
		t.Fatalf("%d cut-offs, proxy's connection closed %v", cuts, isClosed(viaProxy))
	}
	w := stream(viaProxy, "192.0.2.100", "198.51.100.8", false)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "60" || errorBody(t, w.Body.String())["bound"] != "resets_per_ip" || isClosed(viaProxy) {
		t.Fatalf("a cut-off client through the proxy: %d, Retry-After %q, %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	before = served
	if stream(viaProxy, "192.0.2.100", "203.0.113.10", false); served != before+1 {
		t.Fatal("another client through the proxy was not served")
	}
	// A minute later the address is served again.
	clock.advance(time.Minute)
	again := open(t)
	if stream(again, "198.51.100.7", "", false); served != before+2 || isClosed(again) {
		t.Fatal("the address was still cut off after the cut-off")
	}
}
