package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The IPv6-rotation attacker: one host holding a whole /64 that sends
// every request from another address of it, with made-up bearers. It
// comes through a trusted proxy on loopback (the production shape behind
// a load balancer) with its address in X-Forwarded-For, since ::1 is the
// only IPv6 loopback address. Its made-up Forgejo bearers on an
// authenticated tool each reach Forgejo once past the IP ceiling's check,
// and its made-up gateway bearers on /mcp/documents each cost a store
// lookup until the refused-bearer bound stops them; what got through is
// set against those bounds, which count the whole /64 as one client.

const (
	// ipv6Proxy is the trusted proxy the attacker comes through.
	ipv6Proxy = "127.0.0.77"
	// ipv6Net is the attacker's /64 (a documentation prefix).
	ipv6Net = "2001:db8:6666:1"
	// ipv6Bearer marks the attacker's made-up Forgejo bearers, so the
	// emulator can count those that reached it.
	ipv6Bearer = "fake6-"
)

// ipv6Report is what the IPv6-rotation attacker got.
type ipv6Report struct {
	forgejo, documents statusCount
}

// ipv6Address is the attacker's address for its request i: another one
// of its /64 each time.
func ipv6Address(i int) string { return fmt.Sprintf("%s::%x:%x", ipv6Net, i>>16, i&0xffff) }

// runIPv6Attack floods made-up Forgejo bearers and made-up gateway
// bearers from rotating addresses of one /64 until the phase ends or each
// flood has sent floodCap requests.
func runIPv6Attack(ctx context.Context, s *stack, phase time.Duration, floodCap int) *ipv6Report {
	rep := &ipv6Report{}
	ctx, cancel := context.WithTimeout(ctx, phase)
	defer cancel()
	client := clientFrom(ipv6Proxy)
	d := s.demo
	diff := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":%q,"repo":%q,"index":%d}}}`, d.Owner, d.PrivateRepo, d.OpenPull)
	from := func(r *http.Request, i int) *http.Request {
		r.Header.Set("X-Forwarded-For", ipv6Address(i))
		return r
	}
	var wg sync.WaitGroup
	floodWith(ctx, &wg, client, 2, floodCap, &rep.forgejo, func(i int) *http.Request {
		return from(mcpRequest(s.url+"/mcp/forgejo", diff, fmt.Sprintf("%s%d", ipv6Bearer, i)), i)
	})
	// The documents flood's addresses follow the Forgejo flood's, so the
	// two never share an address (they share the /64).
	floodWith(ctx, &wg, client, 2, floodCap, &rep.documents, func(i int) *http.Request {
		return from(mcpRequest(s.url+"/mcp/documents", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, fmt.Sprintf("agw_at_made-up-%d", i)), floodCap+i)
	})
	wg.Wait()
	return rep
}

// line reports the attack against the bounds the gateway ran with; call
// it once the attack is over.
func (r *ipv6Report) line(s *stack, phase time.Duration) string {
	marked := s.up.forgejoMarked(ipv6Bearer, "")
	ceiling, refused := s.setting("ratelimit.ip_ceiling_per_minute"), s.setting("ratelimit.refused_bearers_per_minute")
	lookups := r.documents.count("401")
	return fmt.Sprintf("IPv6 rotation from %s::/64 through the trusted proxy %s, a new address each request: made-up Forgejo bearers %s, "+
		"%d of them reached Forgejo (%d upstream requests; ratelimit.ip_ceiling_per_minute %s per /64, %s); "+
		"made-up gateway bearers %s, %d store lookups (the 401s; ratelimit.refused_bearers_per_minute %s per /64, %s)",
		ipv6Net, ipv6Proxy, r.forgejo.String(), marked.Bearers, marked.Bearer, ceiling, phaseBound(marked.Bearers, ceiling, phase),
		r.documents.String(), lookups, refused, phaseBound(lookups, refused, phase))
}

// phaseBound says whether n stayed within what a per-minute rate allows in
// a phase: the rate for each one-minute window the phase touches (the
// budgets are sliding windows, so a phase of a minute touches two).
func phaseBound(n int, perMinute string, phase time.Duration) string {
	rate, err := strconv.Atoi(perMinute)
	if err != nil {
		return "bound unknown"
	}
	bound := rate * (int(math.Ceil(phase.Minutes())) + 1)
	if n > bound {
		return fmt.Sprintf("OVER the bound of %d for this phase", bound)
	}
	return fmt.Sprintf("within the bound of %d for this phase", bound)
}

// setting is the value of key in the gateway's effective configuration,
// as `serve --config-test` prints it with the gateway's environment, or
// "?" when it cannot be read.
func (s *stack) setting(key string) string {
	cmd := exec.Command(s.bin, "serve", "--config-test")
	cmd.Env = s.cmd.Env
	out, err := cmd.Output()
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == key {
			return f[1]
		}
	}
	return "?"
}
