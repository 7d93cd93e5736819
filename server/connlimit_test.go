package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// dialFrom opens a connection to addr from a loopback source address, so
// one test can play several client addresses.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answered reports whether c got the 503 refusal (and was closed).
func answered(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "HTTP/1.1 503")
}

// acceptAll accepts l's connections until it is closed, handing each to
// the channel it returns.
func acceptAll(l *connLimiter) <-chan net.Conn {
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}

// TestConnLimiter: with 1 connection per address and 2 in all, the
// second connection of an address is refused 503; another address fills
// the total; past it a new connection is refused while none is idle, and
// admitted by closing the idle one once one is; a trusted proxy's address
// meets no per-address bound.
func TestConnLimiter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	idleClosed := 0
	cfg := Config{MaxConnections: 2, MaxConnectionsPerIP: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}}
	l := newConnLimiter(ln, cfg, true, func(b string) { refused = append(refused, b) }, func() { idleClosed++ })
	defer l.Close()
	accepted := acceptAll(l)
	next := func() net.Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(2 * time.Second):
			t.Fatal("no connection accepted")
			return nil
		}
	}
	addr := ln.Addr().String()
	dialFrom(t, "127.0.0.1", addr)
	a := next()
	l.ConnState(a, http.StateActive)
	if c := dialFrom(t, "127.0.0.1", addr); !answered(t, c) {
		t.Fatal("a second connection of one address was not refused")
	}
	dialFrom(t, "127.0.0.2", addr)
	b := next()
	l.ConnState(b, http.StateActive)
	if l.Open() != 2 {
		t.Fatalf("open %d", l.Open())
	}
	if c := dialFrom(t, "127.0.0.3", addr); !answered(t, c) {
		t.Fatal("a connection past the total was not refused with none idle")
	}
	l.ConnState(b, http.StateIdle)
	dialFrom(t, "127.0.0.3", addr)
	next()
	if idleClosed != 1 || l.Open() != 2 {
		t.Fatalf("idle closed %d, open %d", idleClosed, l.Open())
	}
	if _, err := b.Write([]byte("x")); err == nil {
		t.Fatal("the idle connection was not closed")
	}
	if strings.Join(refused, ",") != "connections_per_ip,connections" {
		t.Fatalf("refused %v", refused)
	}
	// The trusted proxy: two connections from one address, the total
	// making room by closing idle ones.
	for _, c := range []net.Conn{a} {
		l.ConnState(c, http.StateIdle)
	}
	dialFrom(t, "127.0.0.9", addr)
	p1 := next()
	l.ConnState(p1, http.StateActive)
	l.mu.Lock()
	var others []net.Conn
	for o := range l.open {
		if o != p1 {
			others = append(others, o)
		}
	}
	l.mu.Unlock()
	for _, o := range others {
		l.ConnState(o, http.StateIdle)
	}
	dialFrom(t, "127.0.0.9", addr)
	next()
	l.mu.Lock()
	proxied := l.perIP["127.0.0.9"]
	l.mu.Unlock()
	if proxied != 0 {
		t.Fatalf("the trusted proxy's connections are counted against its address: %d", proxied)
	}
}

// pipeListener hands out the connections offered to it, each saying it
// comes from the address it was offered with: one test plays any IPv6
// client, which loopback sockets cannot (::1 is the only one).
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv6loopback} }

// fromConn is a pipe end whose peer is remote.
type fromConn struct {
	net.Conn
	remote net.Addr
}

func (c fromConn) RemoteAddr() net.Addr { return c.remote }

// TestConnLimiterIPv6Prefix: the connections of one /64 share the
// per-address bound whatever addresses inside it they come from; the next
// /64 has its own; IPv4 counts exactly; at prefix 128 each IPv6 address
// is its own client.
func TestConnLimiterIPv6Prefix(t *testing.T) {
	for _, tc := range []struct {
		prefix  int
		trusted string // a trusted proxy, "" for none
		offers  []string
		want    []string // "ok" or the refusing bound, per offer
	}{
		{64, "", []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::2", "2001:db8:1:2:aaaa::3", "2001:db8:1:3::1"},
			[]string{"ok", "ok", "connections_per_ip", "ok"}},
		{64, "", []string{"127.0.0.5", "127.0.0.6", "127.0.0.5", "127.0.0.5"}, []string{"ok", "ok", "ok", "connections_per_ip"}},
		{48, "", []string{"2001:db8:1:2::1", "2001:db8:1:3::1", "2001:db8:1:4::1", "2001:db8:2::1"},
			[]string{"ok", "ok", "connections_per_ip", "ok"}},
		{128, "", []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::3"}, []string{"ok", "ok", "ok"}},
		// A trusted proxy's connections are exempt and do not spend the
		// share of the other hosts of its /64.
		{64, "2001:db8:1:2::10/128", []string{"2001:db8:1:2::10", "2001:db8:1:2::10", "2001:db8:1:2::10", "2001:db8:1:2::20", "2001:db8:1:2::21", "2001:db8:1:2::22"},
			[]string{"ok", "ok", "ok", "ok", "ok", "connections_per_ip"}},
	} {
		t.Run(fmt.Sprintf("/%d %s trusting %q", tc.prefix, tc.offers[0], tc.trusted), func(t *testing.T) {
			ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
			refused := make(chan string, len(tc.offers))
			cfg := Config{MaxConnections: 100, MaxConnectionsPerIP: 2, ClientIPv6Prefix: tc.prefix}
			if tc.trusted != "" {
				cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix(tc.trusted)}
			}
			l := newConnLimiter(ln, cfg, false, func(b string) { refused <- b }, nil)
			defer l.Close()
			accepted := acceptAll(l)
			for i, addr := range tc.offers {
				mine, theirs := net.Pipe()
				t.Cleanup(func() { mine.Close(); theirs.Close() })
				ln.conns <- fromConn{Conn: mine, remote: &net.TCPAddr{IP: net.ParseIP(addr), Port: 40000 + i}}
				got := ""
				select {
				case <-accepted:
					got = "ok"
				case got = <-refused:
				case <-time.After(5 * time.Second):
					t.Fatalf("connection %d from %s neither accepted nor refused", i, addr)
				}
				if got != tc.want[i] {
					t.Errorf("connection %d from %s: %s, want %s", i, addr, got, tc.want[i])
				}
			}
		})
	}
}

// TestConnLimiterFairShare: past three quarters of http.max_connections, a
// new connection of the address holding more than its fair share (the
// bound divided among the addresses with connections open) is refused,
// while other addresses still connect.
func TestConnLimiterFairShare(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	var mu sync.Mutex
	l := newConnLimiter(ln, Config{MaxConnections: 8, MaxConnectionsPerIP: 8}, true, func(b string) {
		mu.Lock()
		refused = append(refused, b)
		mu.Unlock()
	}, func() {})
	defer l.Close()
	accepted := acceptAll(l)
	addr := ln.Addr().String()
	open := func(src string) {
		dialFrom(t, src, addr)
		select {
		case c := <-accepted:
			l.ConnState(c, http.StateActive) // busy: never the idle victim
		case <-time.After(2 * time.Second):
			t.Fatalf("a connection from %s was not accepted", src)
		}
	}
	for range 5 {
		open("127.0.0.2")
	}
	open("127.0.0.3") // 6 of 8 open
	if c := dialFrom(t, "127.0.0.2", addr); !answered(t, c) {
		t.Fatal("the address holding 5 of a fair share of 4 was not refused")
	}
	open("127.0.0.3")
	open("127.0.0.4")
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || refused[0] != "connections_per_ip" {
		t.Fatalf("refused %v", refused)
	}
}

// TestConnLimiterCutOff: a new connection from a client key cut off for
// its HTTP/2 resets is refused at accept (bound resets_per_ip), one from
// another address is accepted, and a trusted proxy's is accepted even
// while its key is cut off (it carries other clients).
func TestConnLimiterCutOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan string, 4)
	cfg := Config{MaxConnections: 8, MaxConnectionsPerIP: 8, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}}
	l := newConnLimiter(ln, cfg, true, func(b string) { refused <- b }, nil)
	l.cutOff = func(key string) bool { return key == "127.0.0.2" || key == "127.0.0.9" }
	defer l.Close()
	accepted := acceptAll(l)
	addr := ln.Addr().String()
	if c := dialFrom(t, "127.0.0.2", addr); !answered(t, c) {
		t.Fatal("a cut-off address's connection was not refused")
	}
	if b := <-refused; b != "resets_per_ip" {
		t.Fatalf("refused by %q, want resets_per_ip", b)
	}
	for _, src := range []string{"127.0.0.3", "127.0.0.9"} {
		dialFrom(t, src, addr)
		select {
		case <-accepted:
		case b := <-refused:
			t.Fatalf("a connection from %s was refused (%s)", src, b)
		case <-time.After(2 * time.Second):
			t.Fatalf("a connection from %s was neither accepted nor refused", src)
		}
	}
}
