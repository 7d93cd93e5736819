// Package tcpcut is a loopback TCP proxy that a test can cut, in the
// manner of Toxiproxy: the gateway is pointed at the proxy instead of at
// PostgreSQL or Redis, and cutting the proxy makes the dependency look
// down to the gateway — refused or hanging — while the machine's shared
// server keeps running for everyone else. It only listens on, and dials,
// loopback addresses.
package tcpcut

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is how a cut proxy treats connections.
type Mode int

const (
	// Up forwards every connection.
	Up Mode = iota
	// Refuse closes every open connection and closes each new one as soon
	// as it is accepted: a dependency that is down.
	Refuse
	// Hang keeps new connections open without forwarding a byte, and
	// stops forwarding on the open ones: a dependency that does not
	// answer.
	Hang
)

// Proxy forwards one loopback listener to one loopback target.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  Mode
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup
}

// Start listens on a free loopback port and forwards to target, which
// must be a loopback host:port.
func Start(target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, fmt.Errorf("tcpcut: %s is not a loopback address", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port, to put where the dependency's address
// goes.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set changes the mode; cutting (Refuse, Hang) also drops every open
// connection, as a stopped server or a broken network would.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	p.mode = m
	var drop []net.Conn
	if m != Up {
		for c := range p.conns {
			drop = append(drop, c)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.done = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		switch mode {
		case Refuse:
			c.Close()
			continue
		case Hang:
			// Held open, unread, until the mode changes or the proxy
			// closes: Set drops it with the others.
			p.track(c)
			continue
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward copies both ways between c and a fresh connection to the
// target until either side closes or the proxy is cut.
func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
}
