package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/abuse/attack"
)

// TestAdmissionStalledAttackers is the stalled-attacker case through the binary,
// with the default bounds: a few addresses, each within its own share,
// held the whole body budget or every place in flight with requests that
// send nothing, and every honest POST got 503 for 60 s. Now a declared
// length over the route's cap is 413 before anything is reserved, stalled
// bodies are cut within seconds by the minimum data rate, and at a full
// bound the longest-stalled request is evicted: an honest token exchange
// and tool call from another address succeed while each attack runs.
func TestAdmissionStalledAttackers(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	gw := o.gw.URL
	_, clientID := registerClient(t, gw, nil)
	access, refresh := headlessTokens(t, gw, clientID)
	addr := strings.TrimPrefix(gw, "http://")

	// honest makes a token exchange (a refresh) and a tool call from
	// 127.0.0.1 and fails the test unless both are served.
	honest := func(t *testing.T, when string) {
		t.Helper()
		start := time.Now()
		status, body := tokenGrant(t, gw, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {clientID}})
		if status != 200 {
			t.Fatalf("%s: token exchange %d %v", when, status, body)
		}
		refresh, _ = body["refresh_token"].(string)
		access, _ = body["access_token"].(string)
		resp, out := postRPC(t, gw+"/mcp/documents", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"runtime_bootstrap_get","arguments":{}}}`,
			map[string]string{"Authorization": "Bearer " + access})
		if resp.StatusCode != 200 || !strings.Contains(out, `"result"`) {
			t.Fatalf("%s: tool call %d %.300s", when, resp.StatusCode, out)
		}
		t.Logf("%s: token exchange and tool call served in %v", when, time.Since(start).Round(time.Millisecond))
	}
	metric := func(name, labels string) float64 {
		_, m := get(t, gw+"/metrics")
		return metricValue(t, m, name, labels)
	}
	// attackFrom runs one SlowBodies per source at once and returns their
	// results and how long the slowest took to end.
	attackFrom := func(ctx context.Context, sources []string, a attack.SlowBodies) (chan []attack.SlowBodyResult, chan time.Duration) {
		results, took := make(chan []attack.SlowBodyResult, 1), make(chan time.Duration, 1)
		go func() {
			start := time.Now()
			var mu sync.Mutex
			var all []attack.SlowBodyResult
			var wg sync.WaitGroup
			for _, src := range sources {
				wg.Go(func() {
					b := a
					b.Source, b.Addr = src, addr
					r := b.Run(ctx)
					mu.Lock()
					all = append(all, r)
					mu.Unlock()
				})
			}
			wg.Wait()
			took <- time.Since(start)
			results <- all
		}()
		return results, took
	}
	sources := func(n int, base int) []string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf("127.0.0.%d", base+i))
		}
		return s
	}
	ended := func(t *testing.T, results chan []attack.SlowBodyResult, took chan time.Duration, hold time.Duration) map[int]int {
		t.Helper()
		d := <-took
		statuses := map[int]int{}
		for _, r := range <-results {
			if r.Held > 0 {
				t.Errorf("%d stalled connections were still open after %v: %+v", r.Held, hold, r)
			}
			for k, v := range r.Answered {
				statuses[k] += v
			}
			statuses[0] += r.Closed
		}
		t.Logf("the attack ended after %v: answers %v (0: closed without one)", d.Round(time.Millisecond), statuses)
		if d > 15*time.Second {
			t.Errorf("the stalled connections were held for %v, not seconds", d)
		}
		return statuses
	}

	honest(t, "before any attack")

	t.Run("four addresses declare 8 MiB to /oauth/token", func(t *testing.T) {
		hold := 10 * time.Second
		results, took := attackFrom(context.Background(), sources(4, 11), attack.SlowBodies{Path: "/oauth/token", Conns: 1, Size: 8 << 20, Withhold: 8 << 20, Hold: hold,
			Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
		// Until the attackers hold bytes (as before the fix) or were
		// answered (as now).
		eventually(t, "the attackers to connect", func() bool {
			return len(took) > 0 || metric("agent_gateway_request_body_bytes_buffered", "") > 0
		})
		honest(t, "once they connected")
		if statuses := ended(t, results, took, hold); statuses[413] != 4 {
			t.Fatalf("want four 413s at once, got %v", statuses)
		}
	})

	t.Run("32 stalled 1 MiB bodies to /mcp/documents from 4 addresses", func(t *testing.T) {
		hold := 30 * time.Second
		results, took := attackFrom(context.Background(), sources(4, 21), attack.SlowBodies{Path: "/mcp/documents", Conns: 8, Size: 1 << 20, Hold: hold})
		eventually(t, "the stalled bodies to fill the body budget", func() bool {
			return metric("agent_gateway_request_body_bytes_buffered", "") >= 31<<20
		})
		honest(t, "with the body budget full of stalled bodies")
		ended(t, results, took, hold)
		if n := metric("agent_gateway_stalled_requests_evicted_total", `bound="body_budget"`); n < 1 {
			t.Errorf("no stalled body was evicted (%v)", n)
		}
	})

	t.Run("512 stalled 100-byte requests from 8 addresses", func(t *testing.T) {
		hold := 30 * time.Second
		results, took := attackFrom(context.Background(), sources(8, 31), attack.SlowBodies{Path: "/mcp/documents", Conns: 64, Size: 100, Hold: hold})
		peak := 0.0
		defer func() { t.Logf("peak in flight %v", peak) }()
		eventually(t, "the stalled requests to fill the in-flight bound", func() bool {
			peak = max(peak, metric("agent_gateway_requests_in_flight", ""))
			return peak >= 512
		})
		honest(t, "with every place in flight held by stalled requests")
		ended(t, results, took, hold)
		if n := metric("agent_gateway_stalled_requests_evicted_total", `bound="in_flight"`); n < 1 {
			t.Errorf("no stalled request was evicted (%v)", n)
		}
	})
}
