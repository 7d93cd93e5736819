package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-gateway/agent-gateway/test/abuse/attack"
)

// attackerSource is the one anonymous source of the attack: a loopback
// address of its own, so the gateway sees it as another client than the
// legitimate callers on 127.0.0.1.
const attackerSource = "127.0.0.66"

// attackerMarker marks the attacker's anonymous searches, so the requests
// they cost the Forgejo origin can be counted at the emulator.
const attackerMarker = "attacker-marker"

// statusCount counts answers by status ("error" for transport failures).
type statusCount struct {
	mu sync.Mutex
	m  map[string]int
	n  atomic.Int64
}

func (c *statusCount) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[k]++
}

// count is the number of answers counted under k.
func (c *statusCount) count(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *statusCount) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, k := range sortedKeys(c.m) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, c.m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// attackReport is what each attack got from the gateway.
type attackReport struct {
	slow                                      attack.SlowBodyResult
	slowWaves                                 int
	authorize, register, bearers, hugeMethods statusCount
	cimd, cimdRotating                        statusCount // cimd.go
	registeredClient                          string
}

// clientFrom sends from the loopback address source.
func clientFrom(source string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// runAttack runs every attack at once from attackerSource until the phase
// ends or each flood has sent its cap of requests.
func runAttack(ctx context.Context, s *stack, phase time.Duration, slowConns, floodCap int) *attackReport {
	rep := &attackReport{}
	ctx, cancel := context.WithTimeout(ctx, phase)
	defer cancel()
	client := clientFrom(attackerSource)
	addr := strings.TrimPrefix(s.url, "http://")
	rep.registeredClient = registerClient(client, s.url, 0)
	var wg sync.WaitGroup
	// Hundreds of slow 1 MiB bodies to /mcp/documents (no token needed for
	// the body to be read), held for the whole phase; and waves of fresh
	// ones while it lasts.
	wg.Go(func() {
		rep.slow = attack.SlowBodies{Addr: addr, Source: attackerSource, Path: "/mcp/documents", Conns: slowConns, Size: 1 << 20, Hold: phase}.Run(ctx)
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			attack.SlowBodies{Addr: addr, Source: attackerSource, Path: "/mcp/documents", Conns: max(1, slowConns/6), Size: 1 << 20, Hold: 2 * time.Second}.Run(ctx)
			rep.slowWaves++
		}
	})
	flood := func(workers int, counts *statusCount, req func(i int) *http.Request) {
		floodWith(ctx, &wg, client, workers, floodCap, counts, req)
	}
	junk := url.Values{}
	for i := range 15 {
		junk.Set(fmt.Sprintf("junk%d", i), strings.Repeat("j", 1024))
	}
	flood(4, &rep.authorize, func(i int) *http.Request {
		form := url.Values{"response_type": {"code"}, "client_id": {rep.registeredClient}, "redirect_uri": {"http://127.0.0.1:9999/cb"},
			"code_challenge": {strings.Repeat("c", 43)}, "code_challenge_method": {"S256"}, "state": {fmt.Sprintf("st-%08d", i)},
			"scope": {"documents:read"}, "resource": {s.url + "/mcp/documents"}}
		for k, v := range junk {
			form[k] = v
		}
		r, _ := http.NewRequest(http.MethodPost, s.url+"/oauth/authorize", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	})
	flood(2, &rep.register, func(i int) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, s.url+"/oauth/register", strings.NewReader(registration(i)))
		r.Header.Set("Content-Type", "application/json")
		return r
	})
	d := s.demo
	flood(4, &rep.bearers, func(i int) *http.Request {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_repositories","arguments":{"q":"` + attackerMarker + `"}}}`
		if i%2 == 0 {
			body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":%q,"repo":%q,"index":%d}}}`, d.Owner, d.PrivateRepo, d.OpenPull)
		}
		return mcpRequest(s.url+"/mcp/forgejo", body, fmt.Sprintf("fake-%d", i))
	})
	floodWith(ctx, &wg, clientFrom(cimdSource), 2, floodCap, &rep.cimd, func(i int) *http.Request { return cimdRequest(s, "/flood/", i) })
	floodWith(ctx, &wg, rotatingClient(), 2, floodCap, &rep.cimdRotating, func(i int) *http.Request { return cimdRequest(s, cimdRotatingPath, i) })
	huge := `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("m", 1_040_000) + `"}`
	flood(1, &rep.hugeMethods, func(int) *http.Request { return mcpRequest(s.url+"/mcp/forgejo", huge, "") })
	wg.Wait()
	return rep
}

// floodWith starts workers on wg that send req(i) with client until ctx
// ends or limit requests are sent, counting the answers in counts.
func floodWith(ctx context.Context, wg *sync.WaitGroup, client *http.Client, workers, limit int, counts *statusCount, req func(i int) *http.Request) {
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(counts.n.Add(1))
				if i > limit {
					return
				}
				resp, err := client.Do(req(i).WithContext(ctx))
				if err != nil {
					if ctx.Err() == nil {
						counts.add("error")
					}
					continue
				}
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				counts.add(fmt.Sprint(resp.StatusCode))
			}
		})
	}
}

func mcpRequest(u, body, bearer string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	return r
}

func registration(i int) string {
	return fmt.Sprintf(`{"redirect_uris":["http://127.0.0.1:9999/cb"],"client_name":"flood-%d","token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`, i)
}

// registerClient registers the client the authorize flood names.
func registerClient(client *http.Client, base string, i int) string {
	resp, err := client.Post(base+"/oauth/register", "application/json", strings.NewReader(registration(i)))
	if err != nil {
		return "unregistered"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if _, rest, ok := strings.Cut(string(b), `"client_id":"`); ok {
		if id, _, ok := strings.Cut(rest, `"`); ok {
			return id
		}
	}
	return "unregistered"
}
