package server

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// connLimiter bounds the open connections of the API listener: in all and
// per client address (the TCP peer, counted by middleware.ClientKey: an
// IPv6 peer by its http.client_ipv6_prefix, so one host's addresses share
// one bound); under pressure, by its fair share (overShare). Hundreds of
// connections each holding
// a slow request made the gateway hold hundreds of megabytes in the
// hostile-load run. Past the total bound the connection idle the longest (a
// keep-alive between requests, or one that has sent nothing yet) is closed to
// make room; with none idle, the new connection is refused. Past a client
// address's bound, its new connection is refused. A refused connection is
// answered 503 with Retry-After on plain HTTP, and closed.
//
// A client address cut off for resetting far more HTTP/2 streams than it
// completed (middleware.AddressResets) has its new connections refused
// until the cut-off ends: refused here, before a TLS handshake, they cost
// the gateway least.
//
// A trusted proxy's address is exempt from the per-address bound: it
// carries many clients, whose own bounds are the per-IP bounds on requests
// in flight and body bytes, which see the forwarded address. Its
// connections are not counted in its key either, so they do not spend the
// share of the other hosts of its IPv6 prefix.
type connLimiter struct {
	net.Listener
	max, maxPerIP int
	ipv6Prefix    int
	exempt        func(netip.Addr) bool
	plain         bool // answer refusals with an HTTP 503 (not on TLS)
	refused       func(bound string)
	idleClosed    func()
	// cutOff, if set, reports a client key cut off for its resets.
	cutOff func(key string) bool

	mu    sync.Mutex
	open  map[*limitedConn]struct{}
	perIP map[string]int // by client key; exempt connections not counted
	// answering counts refused connections still being answered; past
	// maxAnswering they are closed at once, so a flood of connections
	// cannot pile up answering goroutines.
	answering atomic.Int64
}

const maxAnswering = 64

// limitedConn is one counted connection.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	key    string // the client key its address counts under
	exempt bool   // a trusted proxy's: not counted under key
	// idleSince is when the connection last became idle (or was accepted);
	// zero while a request is being served. Guarded by l.mu.
	idleSince time.Time
	once      sync.Once
}

func newConnLimiter(ln net.Listener, cfg Config, plain bool, refused func(string), idleClosed func()) *connLimiter {
	return &connLimiter{
		Listener: ln, max: cfg.MaxConnections, maxPerIP: cfg.MaxConnectionsPerIP, ipv6Prefix: cfg.ClientIPv6Prefix,
		exempt: func(a netip.Addr) bool {
			for _, p := range cfg.TrustedProxies {
				if p.Contains(a) {
					return true
				}
			}
			return false
		},
		plain: plain, refused: refused, idleClosed: idleClosed,
		open: map[*limitedConn]struct{}{}, perIP: map[string]int{},
	}
}

// Accept returns the next connection within the bounds; refused ones are
// answered and closed here and never reach the server.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := netip.Addr{}
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			ip = ap.Addr().Unmap()
		}
		lc, victim, bound := l.admit(c, ip)
		if victim != nil {
			victim.Close()
			if l.idleClosed != nil {
				l.idleClosed()
			}
		}
		if lc != nil {
			return lc, nil
		}
		if l.refused != nil {
			l.refused(bound)
		}
		l.refuse(c)
	}
}

// admit counts c in, choosing an idle victim to close when the total
// bound is reached, or names the bound that refuses it.
func (l *connLimiter) admit(c net.Conn, ip netip.Addr) (*limitedConn, *limitedConn, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := middleware.ClientKey(ip, l.ipv6Prefix)
	exempt := l.exempt(ip)
	if !exempt && l.cutOff != nil && l.cutOff(key) {
		return nil, nil, "resets_per_ip"
	}
	if !exempt && (l.perIP[key] >= l.maxPerIP || l.overShare(key)) {
		return nil, nil, "connections_per_ip"
	}
	var victim *limitedConn
	if len(l.open) >= l.max {
		for o := range l.open {
			if !o.idleSince.IsZero() && (victim == nil || o.idleSince.Before(victim.idleSince)) {
				victim = o
			}
		}
		if victim == nil {
			return nil, nil, "connections"
		}
		// Counted out now, so the room is this connection's even before
		// the victim's Close runs.
		l.forget(victim)
	}
	lc := &limitedConn{Conn: c, l: l, key: key, exempt: exempt, idleSince: time.Now()}
	l.open[lc] = struct{}{}
	if !exempt {
		l.perIP[key]++
	}
	return lc, victim, ""
}

// overShare reports whether one more connection of key would take it past
// its fair share while the listener is under pressure (past three quarters
// of max): max divided among the client keys with connections open, key
// included. So under pressure the keys holding the most are refused first,
// however many keys the holders spread over. l.mu is held.
func (l *connLimiter) overShare(key string) bool {
	if (len(l.open)+1)*4 <= l.max*3 {
		return false
	}
	keys := len(l.perIP)
	if l.perIP[key] == 0 {
		keys++
	}
	return l.perIP[key]+1 > max(1, l.max/keys)
}

// forget removes c from the counts; l.mu is held.
func (l *connLimiter) forget(c *limitedConn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if c.exempt {
		return // never counted under its key
	}
	if l.perIP[c.key]--; l.perIP[c.key] <= 0 {
		delete(l.perIP, c.key)
	}
}

// refuse answers a refused connection 503 (plain HTTP) and closes it,
// reading what the client sends for up to a second first so the client
// sees the answer rather than a reset.
func (l *connLimiter) refuse(c net.Conn) {
	if !l.plain || l.answering.Add(1) > maxAnswering {
		if l.plain {
			l.answering.Add(-1)
		}
		c.Close()
		return
	}
	go func() {
		defer l.answering.Add(-1)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := io.WriteString(c, refusedAnswer); err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// Open is the number of connections counted now.
func (l *connLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// ConnState is the http.Server hook that tells the limiter which
// connections are idle.
func (l *connLimiter) ConnState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateActive, http.StateHijacked:
		lc.idleSince = time.Time{}
	case http.StateIdle:
		lc.idleSince = time.Now()
	}
}

// Close counts the connection out once.
func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.forget(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
