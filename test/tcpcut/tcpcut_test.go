package tcpcut

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo is a loopback server that writes each line back.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and reports whether it came back
// within a short deadline.
func roundTrip(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n"
}

// TestProxy: up forwards; refuse and hang stop traffic and drop open
// connections; up again forwards on the same address; a non-loopback
// target is refused.
func TestProxy(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !roundTrip(p.Addr()) {
		t.Fatal("up: no echo")
	}
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	for _, m := range []Mode{Refuse, Hang} {
		p.Set(m)
		if roundTrip(p.Addr()) {
			t.Fatalf("mode %d: traffic passed", m)
		}
		p.Set(Up)
		if !roundTrip(p.Addr()) {
			t.Fatalf("up after mode %d: no echo", m)
		}
	}
	_ = open.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection open across a cut survived it")
	}
	if _, err := Start("192.0.2.1:5432"); err == nil {
		t.Fatal("non-loopback target accepted")
	}
}
