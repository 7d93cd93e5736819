package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// call is one kind of legitimate request: a JSON-RPC call, or a token
// exchange when exchange is set.
type call struct {
	name, path, bearer, body string
	exchange                 *tokenExchange
}

// legitCalls are what honest callers do on both endpoints: an anonymous
// Forgejo read, a verified diff page with a Forgejo token, a document
// read with a gateway token, and an OAuth token exchange.
func legitCalls(s *stack) []call {
	d := s.demo
	return []call{
		{name: "oauth token exchange", exchange: s.honest},
		{name: "forgejo anonymous", path: "/mcp/forgejo", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PublicRepo + `"}}}`},
		{name: "forgejo diff page", path: "/mcp/forgejo", bearer: d.ReaderToken, body: fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":%q,"repo":%q,"index":%d}}}`, d.Owner, d.PublicRepo, d.OpenPull)},
		{name: "documents", path: "/mcp/documents", bearer: s.docsToken, body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"git_document_get","arguments":{"source_id":"` + s.sourceID + `"}}}`},
	}
}

// legitStats are the outcomes of the legitimate calls of one phase.
type legitStats struct {
	mu        sync.Mutex
	latencies []time.Duration
	ok, total int
	failures  map[string]int
	byCall    map[string][]time.Duration
	// cost is what the phase cost the machine (cost.go).
	cost phaseCost
}

func (st *legitStats) add(d time.Duration, failure string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.total++
	st.latencies = append(st.latencies, d)
	if failure == "" {
		st.ok++
		return
	}
	if st.failures == nil {
		st.failures = map[string]int{}
	}
	st.failures[failure]++
}

func (st *legitStats) successRate() float64 {
	if st.total == 0 {
		return 0
	}
	return 100 * float64(st.ok) / float64(st.total)
}

func (st *legitStats) p99() time.Duration { return p99Of(st.latencies) }

// slowest names each call's p99, slowest first: where the time went.
func (st *legitStats) slowest() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	names := sortedKeys(st.byCall)
	sort.Slice(names, func(i, j int) bool { return p99Of(st.byCall[names[i]]) > p99Of(st.byCall[names[j]]) })
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %s", n, ms(p99Of(st.byCall[n]))))
	}
	return strings.Join(parts, ", ")
}

func p99Of(latencies []time.Duration) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), latencies...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[min(len(l)-1, int(float64(len(l))*0.99))]
}

// runLegit makes each legitimate call every interval, from 127.0.0.1, for
// the phase's length: paced well within the callers' budgets, so every
// failure is the attack's doing.
func runLegit(ctx context.Context, s *stack, phase, interval time.Duration) *legitStats {
	st := &legitStats{}
	meter := s.meterCost()
	defer func() { st.cost = meter.done() }()
	ctx, cancel := context.WithTimeout(ctx, phase)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range legitCalls(s) {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second}
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				d, failure := legitRequest(client, s.url, c)
				st.add(d, failure)
				st.mu.Lock()
				if st.byCall == nil {
					st.byCall = map[string][]time.Duration{}
				}
				st.byCall[c.name] = append(st.byCall[c.name], d)
				st.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	wg.Wait()
	return st
}

// legitRequest makes one legitimate call and says how it failed ("" for
// success: HTTP 200 and a result that is not an error).
func legitRequest(client *http.Client, base string, c call) (time.Duration, string) {
	if c.exchange != nil {
		return c.exchange.exchange(client, base)
	}
	req, _ := http.NewRequest(http.MethodPost, base+c.path, strings.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return time.Since(start), c.name + ": transport error"
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	elapsed := time.Since(start)
	switch {
	case err != nil:
		return elapsed, c.name + ": body cut"
	case resp.StatusCode != http.StatusOK:
		return elapsed, fmt.Sprintf("%s: HTTP %d%s", c.name, resp.StatusCode, refusedBound(body))
	case bytes.Contains(body, []byte(`"isError":true`)):
		return elapsed, c.name + ": tool error"
	}
	return elapsed, ""
}

// refusedBound names the load bound a refusal's body gives (" (bound
// in_flight)"), plain or in a JSON-RPC error's data, or "".
func refusedBound(body []byte) string {
	var e struct {
		Error struct {
			Bound string `json:"bound"`
			Data  struct {
				Bound string `json:"bound"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if b := e.Error.Bound + e.Error.Data.Bound; b != "" {
		return " (bound " + b + ")"
	}
	return ""
}
