package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-gateway/agent-gateway/test/abuse/attack"
)

// The multi-address scenarios: n attacking addresses, each
// within its own share, together fill the gateway-wide bounds — the body
// budget with stalled 1 MiB bodies, the in-flight bound with stalled
// 100-byte requests — and flood /oauth/register. Half of the addresses are
// IPv4 loopback addresses of their own (127.0.1.x), half are IPv6 /64s of
// one /48 (multiV6Net) sent through the trusted loopback proxy, one /64
// each. Stalled work is cut by the gateway within seconds, so each address
// opens its stalled connections again, wave after wave, for the whole
// phase. The legitimate callers run beside them from 127.0.0.1; the
// scenario passes when they keep at least 99% success and a p99 within
// three times the run's unattacked baseline.

// multiV6Net is the /48 the IPv6 attackers' /64s are taken from.
const multiV6Net = "2001:db8:7777"

// The totals every scenario aims at the gateway, however many addresses
// share them: the default body budget (32 MiB) and past the in-flight
// bound (512).
const (
	multiStalledBodies   = 32
	multiStalledRequests = 520
)

// attacker is one attacking address: an IPv4 source, or an IPv6 client
// address sent through the trusted proxy.
type attacker struct {
	source, forwarded string
}

func (a attacker) header() http.Header {
	if a.forwarded == "" {
		return nil
	}
	return http.Header{"X-Forwarded-For": {a.forwarded}}
}

// multiAttackers are the n addresses of a scenario.
func multiAttackers(n int) []attacker {
	out := make([]attacker, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = attacker{source: fmt.Sprintf("127.0.1.%d", 1+i/2)}
		} else {
			out[i] = attacker{source: ipv6Proxy, forwarded: fmt.Sprintf("%s:%x::1", multiV6Net, i/2)}
		}
	}
	return out
}

// multiReport is what one scenario saw.
type multiReport struct {
	n                       int
	legit                   *legitStats
	bodies, requests        attack.SlowBodyResult
	bodyWaves, requestWaves atomic.Int64
	register                statusCount
	rowsAdded               int64
	byTable                 string
	clientsAdded            int64
	evicted                 string
}

// runMulti runs one scenario for phase while the legitimate callers run.
func runMulti(ctx context.Context, s *stack, n int, phase, interval time.Duration) (*multiReport, error) {
	rep := &multiReport{n: n}
	rowsBefore, err := s.rows()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, phase)
	defer cancel()
	addr := strings.TrimPrefix(s.url, "http://")
	var mu sync.Mutex
	add := func(into *attack.SlowBodyResult, r attack.SlowBodyResult) {
		mu.Lock()
		defer mu.Unlock()
		if into.Answered == nil {
			into.Answered = map[int]int{}
		}
		for k, v := range r.Answered {
			into.Answered[k] += v
		}
		into.RetryAfter += r.RetryAfter
		into.Closed += r.Closed
		into.Held += r.Held
		into.DialFailed += r.DialFailed
	}
	var wg sync.WaitGroup
	for _, a := range multiAttackers(n) {
		// Stalled bodies: all of a 1 MiB body but its last ten bytes.
		wg.Go(func() {
			for ctx.Err() == nil {
				wave := time.Now()
				add(&rep.bodies, attack.SlowBodies{Addr: addr, Source: a.source, Header: a.header(), Path: "/mcp/documents",
					Conns: max(1, multiStalledBodies/n), Size: 1 << 20, Hold: phase}.Run(ctx))
				rep.bodyWaves.Add(1)
				pace(ctx, wave)
			}
		})
		// Stalled requests: 90 of 100 bytes.
		wg.Go(func() {
			for ctx.Err() == nil {
				wave := time.Now()
				add(&rep.requests, attack.SlowBodies{Addr: addr, Source: a.source, Header: a.header(), Path: "/mcp/forgejo",
					Conns: max(1, multiStalledRequests/n), Size: 100, Hold: phase}.Run(ctx))
				rep.requestWaves.Add(1)
				pace(ctx, wave)
			}
		})
	}
	// The registration flood: every address in turn, paced (about 50 a
	// second, more than 64 addresses' default limits allow) so the flood
	// costs the shared machine no more than it needs to.
	attackers := multiAttackers(n)
	clients := map[string]*http.Client{}
	for _, a := range attackers {
		if clients[a.source] == nil {
			clients[a.source] = clientFrom(a.source)
		}
	}
	var next atomic.Int64
	for range 1 {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1))
				a := attackers[i%n]
				r, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/oauth/register", strings.NewReader(registration(1_000_000+i)))
				r.Header.Set("Content-Type", "application/json")
				if a.forwarded != "" {
					r.Header.Set("X-Forwarded-For", a.forwarded)
				}
				resp, err := clients[a.source].Do(r)
				if err != nil {
					if ctx.Err() == nil {
						rep.register.add("error")
					}
					continue
				}
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				rep.register.add(fmt.Sprint(resp.StatusCode))
				time.Sleep(20 * time.Millisecond) // 50 a second: past 64 addresses' 20 a minute each
			}
		})
	}
	// The honest callers start once the attack has had a moment to fill
	// the bounds, and stop with it.
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	rep.legit = runLegit(ctx, s, time.Until(deadlineOf(ctx)), interval)
	wg.Wait()
	rowsAfter, err := s.rows()
	if err != nil {
		return nil, err
	}
	rep.rowsAdded, rep.byTable = rowsAdded(rowsBefore, rowsAfter)
	rep.clientsAdded = rowsAfter["oauth_clients"] - rowsBefore["oauth_clients"]
	rep.evicted = s.evictions()
	return rep, nil
}

// evictions reads the gateway's count of evicted stalled requests by
// bound from /metrics (cumulative over the run).
func (s *stack) evictions() string {
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	var parts, conns []string
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "agent_gateway_stalled_requests_evicted_total{bound=\""); ok {
			parts = append(parts, strings.Replace(rest, "\"} ", " ", 1))
		}
		if rest, ok := strings.CutPrefix(l, "agent_gateway_idle_connections_closed_total "); ok {
			conns = append(conns, "idle connections closed at max_connections "+rest)
		}
		if rest, ok := strings.CutPrefix(l, "agent_gateway_load_refusals_total{bound=\"connections\"} "); ok {
			conns = append(conns, "connections refused at max_connections "+rest)
		}
	}
	return strings.Join(append(parts, conns...), ", ")
}

// lines reports the scenario: its verdict, what the attackers got and
// what the registration flood added to the store, set against the bound
// on registrations: each address's rate times the addresses, and never
// more than the gateway-wide rate, however many addresses send.
func (r *multiReport) lines(baseline *legitStats, s *stack, noLatencyBound bool) (string, bool) {
	verdict, ok := r.verdict(baseline, noLatencyBound)
	perAddress, total := s.setting("oauth.register_per_minute"), s.setting("oauth.register_total_per_minute")
	var rate, totalRate int
	_, _ = fmt.Sscan(perAddress, &rate)
	_, _ = fmt.Sscan(total, &totalRate)
	// Two windows: a phase under a minute touches at most two.
	bound := int64(min(rate*r.n, totalRate) * 2)
	within := fmt.Sprintf("within the bound of %d (2 windows of the least of oauth.register_per_minute %s × %d addresses and oauth.register_total_per_minute %s)", bound, perAddress, r.n, total)
	if rate == 0 || totalRate == 0 || r.clientsAdded > bound {
		within = fmt.Sprintf("OVER the bound of %d", bound)
		ok = false
	}
	out := verdict + "\n" +
		fmt.Sprintf("  p99 by call: %s (baseline: %s)\n", r.legit.slowest(), baseline.slowest()) +
		fmt.Sprintf("  attacked: %s\n  baseline: %s\n", r.legit.cost, baseline.cost) +
		fmt.Sprintf("  stalled 1 MiB bodies (%d waves): %s; stalled 100-byte requests (%d waves): %s\n", r.bodyWaves.Load(), r.slow(r.bodies), r.requestWaves.Load(), r.slow(r.requests)) +
		fmt.Sprintf("  /oauth/register flood: %s; store growth %d rows (%s); oauth_clients +%d, %s\n", r.register.String(), r.rowsAdded, r.byTable, r.clientsAdded, within) +
		fmt.Sprintf("  stalled requests evicted so far (agent_gateway_stalled_requests_evicted_total): %s", r.evicted)
	if len(r.legit.failures) > 0 {
		out += fmt.Sprintf("\n  legitimate failures: %v", r.legit.failures)
	}
	return out, ok
}

// pace waits until a second has passed since a wave began: a wave refused
// at once is not sent again at once, so the attackers (on the same
// machine) spend their CPU holding the gateway's bounds, not spinning.
func pace(ctx context.Context, wave time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(wave.Add(time.Second))):
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// verdict checks the scenario against the run's unattacked baseline.
func (r *multiReport) verdict(baseline *legitStats, noLatencyBound bool) (string, bool) {
	rate, p99, base := r.legit.successRate(), r.legit.p99(), baseline.p99()
	bound := "bound " + ms(3*base)
	ok := rate >= 99
	if noLatencyBound {
		bound += ", not enforced"
	} else {
		ok = ok && p99 <= 3*base
	}
	word := "PASS"
	if !ok {
		word = "FAIL"
	}
	return fmt.Sprintf("%s: %d addresses (%d IPv4, %d IPv6 /64s of %s::/48): legitimate %d calls, %.1f%% served, p99 %s (baseline %s, %s)",
		word, r.n, (r.n+1)/2, r.n/2, multiV6Net, r.legit.total, rate, ms(p99), ms(base), bound), ok
}

func (r *multiReport) slow(res attack.SlowBodyResult) string {
	var parts []string
	for _, k := range sortedKeys(res.Answered) {
		parts = append(parts, fmt.Sprintf("%d×%d", k, res.Answered[k]))
	}
	return fmt.Sprintf("answered %s, closed %d, held to the end %d", strings.Join(parts, " "), res.Closed, res.Held)
}
