package server

import (
	"bufio"
	"net"
	"net/http"
	"net/netip"
	"strings"
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
	proxied := l.perIP[netip.MustParseAddr("127.0.0.9")]
	l.mu.Unlock()
	if proxied != 2 {
		t.Fatalf("trusted proxy connections %d", proxied)
	}
}
