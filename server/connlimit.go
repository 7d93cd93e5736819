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
)

// connLimiter bounds the open connections of the API listener: in all and
// per client address (the TCP peer). Hundreds of connections each holding
// a slow request made the gateway hold hundreds of megabytes (issue 13).
// Past the total bound the connection idle the longest (a keep-alive
// between requests, or one that has sent nothing yet) is closed to make
// room; with none idle, the new connection is refused. Past a client
// address's bound, its new connection is refused. A refused connection is
// answered 503 with Retry-After on plain HTTP, and closed.
//
// A trusted proxy's address is exempt from the per-address bound: it
// carries many clients, whose own bounds are the per-IP bounds on requests
// in flight and body bytes, which see the forwarded address.
type connLimiter struct {
	net.Listener
	max, maxPerIP int
	exempt        func(netip.Addr) bool
	plain         bool // answer refusals with an HTTP 503 (not on TLS)
	refused       func(bound string)
	idleClosed    func()

	mu    sync.Mutex
	open  map[*limitedConn]struct{}
	perIP map[netip.Addr]int
	// answering counts refused connections still being answered; past
	// maxAnswering they are closed at once, so a flood of connections
	// cannot pile up answering goroutines.
	answering atomic.Int64
}

const maxAnswering = 64

// limitedConn is one counted connection.
type limitedConn struct {
	net.Conn
	l  *connLimiter
	ip netip.Addr
	// idleSince is when the connection last became idle (or was accepted);
	// zero while a request is being served. Guarded by l.mu.
	idleSince time.Time
	once      sync.Once
}

func newConnLimiter(ln net.Listener, cfg Config, plain bool, refused func(string), idleClosed func()) *connLimiter {
	return &connLimiter{
		Listener: ln, max: cfg.MaxConnections, maxPerIP: cfg.MaxConnectionsPerIP,
		exempt: func(a netip.Addr) bool {
			for _, p := range cfg.TrustedProxies {
				if p.Contains(a) {
					return true
				}
			}
			return false
		},
		plain: plain, refused: refused, idleClosed: idleClosed,
		open: map[*limitedConn]struct{}{}, perIP: map[netip.Addr]int{},
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
	if !l.exempt(ip) && l.perIP[ip] >= l.maxPerIP {
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
	lc := &limitedConn{Conn: c, l: l, ip: ip, idleSince: time.Now()}
	l.open[lc] = struct{}{}
	l.perIP[ip]++
	return lc, victim, ""
}

// forget removes c from the counts; l.mu is held.
func (l *connLimiter) forget(c *limitedConn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if l.perIP[c.ip]--; l.perIP[c.ip] <= 0 {
		delete(l.perIP, c.ip)
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
