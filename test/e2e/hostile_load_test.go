package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/test/abuse/attack"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// The hostile-load tests through the real binary: what an
// unauthenticated caller can make the gateway hold or spend, and the
// gateway's own tokens sent to the wrong endpoint.

// TestHostileLoadGatewayTokensNotForwarded: every gateway token (access,
// refresh, legacy) sent to /mcp/forgejo is 401 invalid_token, on an
// authenticated tool and on an anonymous one, and the Forgejo origin sees
// no request at all; the log names the refused token by its hash only.
func TestHostileLoadGatewayTokensNotForwarded(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	st.emu.ResetRequests()
	calls := map[string]string{
		"authenticated tool": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PrivateRepo + `","index":1}}}`,
		"anonymous tool":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PublicRepo + `"}}}`,
		"tools/list":         `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	}
	for _, prefix := range []string{"agw_at_", "agw_rt_", "agw_lt_", "AGW_AT_"} {
		token := prefix + randomHex(t)
		st.canaries.Add("a gateway token sent to /mcp/forgejo", token)
		for what, body := range calls {
			t.Run(prefix+" "+what, func(t *testing.T) {
				resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", body, map[string]string{"Authorization": "Bearer " + token})
				st.gw.Record(out)
				if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
					t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), out)
				}
			})
		}
		// An access line is written after its answer: wait for it.
		eventually(t, "the refusal of "+prefix+"… logged under the token's hash", func() bool {
			return strings.Contains(st.gw.Logs(), `"caller":"refused:`+middleware.CredentialHash(token)+`"`)
		})
	}
	for _, r := range st.emu.Requests() {
		t.Errorf("a gateway token's call reached Forgejo: %s %s", r.Method, r.Path)
	}
}

// madeUpBearers sends n calls of body to each endpoint URL in turn, each
// with a fresh made-up bearer, and returns the statuses seen. from, if
// set, gives call i's X-Forwarded-For (the gateway must trust loopback).
func madeUpBearers(t *testing.T, urls []string, body string, n int, from func(i int) string) map[int]int {
	t.Helper()
	statuses := map[int]int{}
	for i := range n {
		h := map[string]string{"Authorization": "Bearer fake-" + randomHex(t)}
		if from != nil {
			h["X-Forwarded-For"] = from(i)
		}
		resp, out := postRPC(t, urls[i%len(urls)]+"/mcp/forgejo", body, h)
		statuses[resp.StatusCode]++
		if resp.StatusCode == 429 && !strings.Contains(out, "rate_limited") {
			t.Fatalf("429 without rate_limited: %s", out)
		}
	}
	return statuses
}

// bearersSeen counts the distinct Authorization headers the emulator got.
func bearersSeen(emu interface{ Requests() []forgejoemu.Recorded }) int {
	seen := map[string]bool{}
	for _, r := range emu.Requests() {
		if a := r.Header.Get("Authorization"); a != "" {
			seen[a] = true
		}
	}
	return len(seen)
}

// TestHostileLoadMadeUpBearers: a bearer the gateway has not verified is
// not an identity. With a read budget of 5, twenty anonymous-tool calls
// each carrying a fresh made-up bearer get five answers and fifteen 429s;
// with an IP ceiling of 5, twenty authenticated-tool calls with fresh
// bearers send only five of them to Forgejo. The same holds when each
// call comes from another address of one IPv6 /64 (through a trusted
// proxy), while a caller from the next /64 is still served.
func TestHostileLoadMadeUpBearers(t *testing.T) {
	v6 := rotating(t)
	for _, tc := range []struct {
		name  string
		proxy bool               // loopback is a trusted proxy, the caller's address in X-Forwarded-For
		from  func(i int) string // nil: loopback itself
		other string             // an address outside the caller's prefix, "" for none
	}{
		{"one address", false, nil, ""},
		{"IPv6 addresses rotating in one /64", true, v6, nextSlash64(v6(0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := func(read string) map[string]string {
				e := map[string]string{"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": read, "AGENT_GATEWAY_RATELIMIT_IP_CEILING_PER_MINUTE": "5"}
				if tc.proxy {
					e = behindProxy(e)
				}
				return e
			}
			st := startForgejoStack(t, env("5"))
			d := st.demo
			search := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_repositories","arguments":{"q":"gateway"}}}`
			if got := madeUpBearers(t, []string{st.gw.URL}, search, 20, tc.from); got[200] != 5 || got[429] != 15 {
				t.Fatalf("anonymous tool with made-up bearers: %v, want 5×200 and 15×429", got)
			}
			if tc.other != "" {
				if got := madeUpBearers(t, []string{st.gw.URL}, search, 1, func(int) string { return tc.other }); got[200] != 1 {
					t.Fatalf("a caller from %s: %v, want 200", tc.other, got)
				}
			}
			// A fresh gateway (fresh budgets) for the authenticated tools.
			st = startForgejoStack(t, env("100"))
			st.emu.ResetRequests()
			diff := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PrivateRepo + `","index":1}}}`
			if got := madeUpBearers(t, []string{st.gw.URL}, diff, 20, tc.from); got[200] != 5 || got[429] != 15 {
				t.Fatalf("authenticated tool with made-up bearers: %v, want 5 answered and 15×429", got)
			}
			if n := bearersSeen(st.emu); n != 5 {
				t.Fatalf("Forgejo saw %d made-up bearers, want 5", n)
			}
		})
	}
}

// TestHostileLoadMadeUpBearersReplicas: the IP's budget and ceiling are
// shared through Redis, so alternating between two replicas buys nothing.
// The client address comes from X-Forwarded-For (loopback is a trusted
// proxy here), a fresh one per run so parallel runs sharing the Redis do
// not meet.
func TestHostileLoadMadeUpBearersReplicas(t *testing.T) {
	rp := startReplicas(t, map[string]string{
		"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE":       "6",
		"AGENT_GATEWAY_RATELIMIT_IP_CEILING_PER_MINUTE": "4",
		"AGENT_GATEWAY_TRUSTED_PROXIES":                 "127.0.0.1",
	})
	d := rp.fj.demo
	urls := []string{rp.a.URL, rp.b.URL}
	b := []byte(randomHex(t))
	xff := fmt.Sprintf("10.%d.%d.%d", b[0], b[1], b[2])
	from := func(int) string { return xff }
	search := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_repositories","arguments":{"q":"gateway"}}}`
	if got := madeUpBearers(t, urls, search, 12, from); got[200] != 6 || got[429] != 6 {
		t.Fatalf("anonymous tool across replicas: %v, want 6×200 and 6×429", got)
	}
	xff = fmt.Sprintf("10.%d.%d.%d", b[3], b[4], b[5])
	rp.fj.emu.ResetRequests()
	diff := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PrivateRepo + `","index":1}}}`
	if got := madeUpBearers(t, urls, diff, 12, from); got[200] != 4 || got[429] != 8 {
		t.Fatalf("authenticated tool across replicas: %v, want 4 answered and 8×429", got)
	}
	if n := bearersSeen(rp.fj.emu); n != 4 {
		t.Fatalf("Forgejo saw %d made-up bearers, want 4", n)
	}
}

// TestHostileLoadSlowBodies: the scenario, scaled to the test
// machine: 100 connections from one address each declare a 1 MiB body to
// /mcp/documents (no token needed to be read), send all but ten bytes and
// stall. The gateway holds no more than the address's body share, refuses
// the rest early with Retry-After, and an honest caller from another
// address is served throughout. (Memory itself is measured by the abuse
// run, go run ./test/abuse, not in a timed test.)
func TestHostileLoadSlowBodies(t *testing.T) {
	const share = 4 << 20
	st := startForgejoStack(t, map[string]string{
		"AGENT_GATEWAY_HTTP_MAX_CONNECTIONS_PER_IP":   "32",
		"AGENT_GATEWAY_HTTP_MAX_IN_FLIGHT_PER_IP":     "16",
		"AGENT_GATEWAY_HTTP_BODY_BUDGET_PER_IP_BYTES": fmt.Sprint(share),
		"AGENT_GATEWAY_HTTP_BODY_BUDGET_BYTES":        fmt.Sprint(4 * share),
	})
	addr := strings.TrimPrefix(st.gw.URL, "http://")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan attack.SlowBodyResult, 1)
	go func() {
		results <- attack.SlowBodies{Addr: addr, Source: "127.0.0.66", Path: "/mcp/documents", Conns: 100, Size: 1 << 20, Hold: 8 * time.Second}.Run(ctx)
	}()
	var maxBuffered, maxOpen float64
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for i := 0; i < 20; i++ {
		time.Sleep(250 * time.Millisecond)
		start := time.Now()
		resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", list, nil)
		if resp.StatusCode != 200 || time.Since(start) > 5*time.Second {
			t.Fatalf("honest caller during the attack: %d after %v: %.200s", resp.StatusCode, time.Since(start), out)
		}
		_, m := get(t, st.gw.URL+"/metrics")
		maxBuffered = max(maxBuffered, metricValue(t, m, "agent_gateway_request_body_bytes_buffered", ""))
		maxOpen = max(maxOpen, metricValue(t, m, "agent_gateway_open_connections", ""))
	}
	res := <-results
	t.Logf("attack: %+v; peak buffered %.0f bytes, peak open connections %.0f", res, maxBuffered, maxOpen)
	if maxBuffered < 0 || maxBuffered > share+64<<10 {
		t.Errorf("body bytes buffered peaked at %.0f, over the address's share of %d", maxBuffered, share)
	}
	if maxOpen < 0 || maxOpen > 32+8 {
		t.Errorf("open connections peaked at %.0f with 32 per address", maxOpen)
	}
	if res.Held > 16 {
		t.Errorf("%d slow bodies were held to the end, want at most the in-flight share", res.Held)
	}
	if refused := res.Answered[429] + res.Answered[503]; refused < 50 || res.RetryAfter != refused {
		t.Errorf("refused %d early (%d with Retry-After), want most of 100, all with Retry-After", refused, res.RetryAfter)
	}
	_, m := get(t, st.gw.URL+"/metrics")
	for _, series := range []string{`agent_gateway_load_refusals_total{bound="connections_per_ip"}`, `agent_gateway_load_refusals_total{bound="body_budget_per_ip"}`} {
		if metricValue(t, m, series, "") <= 0 {
			t.Errorf("%s not counted", series)
		}
	}
}

// TestHostileLoadLogVolume: eight requests with a 1,040,000-byte JSON-RPC
// method (and a long path on a ninth), answered and refused alike (a read
// budget of 5 makes some 429), grow the log by a few kilobytes, not
// megabytes; each line says how long the value was.
func TestHostileLoadLogVolume(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "5"})
	before := len(st.gw.Logs())
	body := `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("m", 1_040_000) + `"}`
	statuses := map[int]int{}
	for range 8 {
		resp, _ := postRPC(t, st.gw.URL+"/mcp/forgejo", body, nil)
		statuses[resp.StatusCode]++
	}
	resp, _ := postRPC(t, st.gw.URL+"/mcp/forgejo/"+strings.Repeat("p", 30000), `{}`, nil)
	statuses[resp.StatusCode]++
	// The last access line is written after its answer: wait for it.
	eventually(t, "the long path's access line", func() bool { return strings.Contains(st.gw.Logs(), `"path_bytes":30013`) })
	grown := len(st.gw.Logs()) - before
	t.Logf("statuses %v; the log grew %d bytes", statuses, grown)
	if statuses[429] == 0 {
		t.Errorf("no request was refused by the budget: %v", statuses)
	}
	if grown > 9*2048 {
		t.Fatalf("nine requests grew the log by %d bytes", grown)
	}
	if !strings.Contains(st.gw.Logs(), `"rpc_method_bytes":1040000`) || !strings.Contains(st.gw.Logs(), `"path_bytes":30013`) {
		t.Fatal("the capped values' lengths are not logged")
	}
}

// TestHostileLoadRedisSecrets: a malformed Redis URL fails the start
// naming the key, never printing its password; and go-redis's own lines
// (a pool that cannot dial once Redis is gone) arrive as JSON records of
// the gateway's log, not plain text on stderr.
func TestHostileLoadRedisSecrets(t *testing.T) {
	secret := gatewaytest.NewCanaryToken("redis-password")
	for _, raw := range []string{"redis://:" + secret + "@127.0.0.1:notaport/15", "redis://user:" + secret + "@127.0.0.1:6379/notadb"} {
		cmd := exec.Command(gatewaytest.Binary(t), "serve")
		cmd.Env = append(os.Environ(), "AGENT_GATEWAY_LISTEN="+gatewaytest.FreeAddr(t), "AGENT_GATEWAY_DATA_DIR="+t.TempDir(),
			"AGENT_GATEWAY_RATELIMIT_REDIS_URL="+raw)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ratelimit.redis_url") || strings.Contains(string(out), secret) {
			t.Fatalf("exit %v: %s", err, out)
		}
	}

	// A Redis that answers PING at start and then goes away.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
			go fakeRedisConn(c)
		}
	}()
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_REDIS_URL": "redis://" + ln.Addr().String() + "/0"})
	ln.Close()
	for c := range conns {
		c.Close()
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for range 3 {
		// Closed, and named as the gateway's fault (503 unavailable),
		// not as a spent budget.
		if resp, body := postRPC(t, st.gw.URL+"/mcp/forgejo", list, nil); resp.StatusCode != 503 || !strings.Contains(body, `"unavailable"`) {
			t.Fatalf("a budget without its Redis did not fail closed as unavailable: %d %s", resp.StatusCode, body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(st.gw.Logs(), `"source":"go-redis"`) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(st.gw.Logs(), `"source":"go-redis"`) {
		t.Fatalf("no go-redis record in the log:\n%s", st.gw.Logs())
	}
	for _, l := range strings.Split(strings.TrimSpace(st.gw.Logs()), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("a log line is not JSON: %.200s", l)
		}
	}
}

// fakeRedisConn answers every RESP command of one connection: PONG to
// PING, an error to anything else (go-redis then runs without the newer
// handshake).
func fakeRedisConn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
		if !strings.HasPrefix(line, "*") || err != nil {
			return
		}
		var cmd string
		for i := range n {
			if _, err := r.ReadString('\n'); err != nil { // $len
				return
			}
			arg, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if i == 0 {
				cmd = strings.ToUpper(strings.TrimSpace(arg))
			}
		}
		answer := "-ERR unknown command\r\n"
		if cmd == "PING" {
			answer = "+PONG\r\n"
		}
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
	}
}

// TestHostileLoadSmallPoints: /static/ lists nothing;
// a JSON-RPC id the SDK would answer altered (1.5 → 1, 9007199254740993 →
// …992) is refused with -32600 and id null before the SDK sees it, and
// the largest safe integer is echoed exactly.
func TestHostileLoadSmallPoints(t *testing.T) {
	st := startForgejoStack(t, nil)
	if code, body := get(t, st.gw.URL+"/static/"); code != 404 || strings.Contains(body, "style.css") {
		t.Fatalf("/static/: %d %.200s", code, body)
	}
	if code, _ := get(t, st.gw.URL+"/static/style.css"); code != 200 {
		t.Fatalf("/static/style.css: %d", code)
	}
	for _, id := range []string{"1.5", "9007199254740993", "1e3", "-0", "1.0", "true"} {
		for _, endpoint := range []string{"/mcp/forgejo", "/mcp/documents"} {
			t.Run(endpoint+" id "+id, func(t *testing.T) {
				resp, out := postRPC(t, st.gw.URL+endpoint, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`, nil)
				var v struct {
					ID    json.RawMessage    `json:"id"`
					Error struct{ Code int } `json:"error"`
				}
				if err := json.Unmarshal([]byte(out), &v); err != nil || resp.StatusCode != 400 || string(v.ID) != "null" || v.Error.Code != -32600 {
					t.Fatalf("%d %s", resp.StatusCode, out)
				}
			})
		}
	}
	resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", `{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/list"}`, nil)
	if resp.StatusCode != 200 || !strings.Contains(out, `"id":9007199254740991`) {
		t.Fatalf("the largest safe id: %d %.300s", resp.StatusCode, out)
	}
}

// TestRefusedBearersBeforeLookup: the real binary answers made-up
// gateway bearers on /mcp/documents with 401 until the client address has
// had ratelimit.refused_bearers_per_minute of them refused; past that, its
// bearers get 429 with Retry-After before any store lookup, while a request
// without a bearer still gets the 401 challenge, and /metrics counts the
// refusals.
func TestRefusedBearersBeforeLookup(t *testing.T) {
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
		"AGENT_GATEWAY_RATELIMIT_REFUSED_BEARERS_PER_MINUTE": "3",
	}})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	bearer := func(i int) map[string]string {
		return map[string]string{"Authorization": fmt.Sprintf("Bearer agw_at_made-up-%d", i)}
	}
	for i := range 3 {
		if resp, out := postRPC(t, gw.URL+"/mcp/documents", body, bearer(i)); resp.StatusCode != 401 {
			t.Fatalf("made-up bearer %d: %d %.200s", i, resp.StatusCode, out)
		}
	}
	for i := 3; i < 5; i++ {
		resp, out := postRPC(t, gw.URL+"/mcp/documents", body, bearer(i))
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(out, `"budget":"refused_bearers"`) || !strings.Contains(out, `"retry_after_seconds":`+resp.Header.Get("Retry-After")) {
			t.Fatalf("made-up bearer %d past the bound: %d Retry-After %q %.300s", i, resp.StatusCode, resp.Header.Get("Retry-After"), out)
		}
	}
	if resp, out := postRPC(t, gw.URL+"/mcp/documents", body, nil); resp.StatusCode != 401 {
		t.Fatalf("no bearer past the bound: %d %.200s", resp.StatusCode, out)
	}
	_, m := get(t, gw.URL+"/metrics")
	if want := `agent_gateway_budget_rejections_total{budget="refused_bearers",toolset="agent-gateway-documents"} 2`; !strings.Contains(m, want) {
		t.Fatalf("/metrics lacks %s", want)
	}
}
