package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// The per-address bounds through the real binary when the attacker holds
// a whole IPv6 /64 and rotates addresses inside it (made-up Forgejo
// bearers: TestHostileLoadMadeUpBearers). The gateway sits
// behind a trusted proxy on loopback, the production shape, and the
// attacker's addresses come in X-Forwarded-For: ::1 is the only IPv6
// loopback address, and binding others needs root. (The connection
// bound, which sees only the TCP peer, is pinned by server's
// TestConnLimiterIPv6Prefix.)

// rotating returns call i's address inside one /64 chosen per test (so
// runs never meet), each call from another address of it.
func rotating(t *testing.T) func(i int) string {
	b := []byte(randomHex(t))
	return func(i int) string {
		return fmt.Sprintf("2001:db8:%x:%x:%x::%x", b[0], uint16(b[1])<<8|uint16(b[2]), i+1, b[3])
	}
}

// behindProxy is the environment of a gateway whose loopback peer is a
// trusted proxy, plus env.
func behindProxy(env map[string]string) map[string]string {
	e := map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "127.0.0.1"}
	for k, v := range env {
		e[k] = v
	}
	return e
}

// nextSlash64 returns an address of the /64 after a's (its fourth group
// plus one).
func nextSlash64(a string) string {
	g := strings.Split(a, ":")
	n, _ := strconv.ParseUint(g[3], 16, 16)
	g[3] = strconv.FormatUint((n+1)&0xffff, 16)
	return strings.Join(g, ":")
}

// TestRefusedBearersIPv6Rotation: made-up gateway bearers on
// /mcp/documents, each from another address of one /64, get three 401s
// (three store lookups) and then 429 before any lookup, as one address
// would; the next /64 still gets its 401. With http.client_ipv6_prefix
// 56, addresses spread over the /64s of one /56 are held the same way.
func TestRefusedBearersIPv6Rotation(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	send := func(t *testing.T, url string, i int, from string) int {
		t.Helper()
		resp, out := postRPC(t, url+"/mcp/documents", body, map[string]string{
			"Authorization": fmt.Sprintf("Bearer agw_at_made-up-%d", i), "X-Forwarded-For": from,
		})
		if resp.StatusCode == 429 && (resp.Header.Get("Retry-After") == "" || !strings.Contains(out, `"budget":"refused_bearers"`)) {
			t.Fatalf("429 without Retry-After or budget: %q %.300s", resp.Header.Get("Retry-After"), out)
		}
		return resp.StatusCode
	}
	from := rotating(t)
	for _, tc := range []struct {
		name   string
		prefix string // http.client_ipv6_prefix, "" for the default
		from   func(i int) string
		other  string // an address outside the attacker's prefix
	}{
		{"one /64 at the default prefix", "", from, nextSlash64(from(0))},
		{"the /64s of one /56 at prefix 56", "56", func(i int) string { return fmt.Sprintf("2001:db8:5600:%x::1", i) }, "2001:db8:5601::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"AGENT_GATEWAY_RATELIMIT_REFUSED_BEARERS_PER_MINUTE": "3"}
			if tc.prefix != "" {
				env["AGENT_GATEWAY_HTTP_CLIENT_IPV6_PREFIX"] = tc.prefix
			}
			gw := gatewaytest.Start(t, gatewaytest.Options{Env: behindProxy(env)})
			statuses := map[int]int{}
			for i := range 20 {
				statuses[send(t, gw.URL, i, tc.from(i))]++
			}
			if statuses[401] != 3 || statuses[429] != 17 {
				t.Fatalf("20 made-up bearers from rotating addresses: %v, want 3×401 (lookups) and 17×429", statuses)
			}
			if code := send(t, gw.URL, 99, tc.other); code != 401 {
				t.Fatalf("a made-up bearer from %s: %d, want its own 401", tc.other, code)
			}
			_, m := get(t, gw.URL+"/metrics")
			if want := `agent_gateway_budget_rejections_total{budget="refused_bearers",toolset="agent-gateway-documents"} 17`; !strings.Contains(m, want) {
				t.Fatalf("/metrics lacks %s", want)
			}
		})
	}
}

// TestTrustedProxiesCatchAllRefused: a trusted_proxies entry covering
// every address would let any caller forge X-Forwarded-For and so its
// client address and budgets; the binary refuses it at --config-test and
// at start, naming the key, and serves nothing.
func TestTrustedProxiesCatchAllRefused(t *testing.T) {
	for _, tc := range []struct {
		value string
		args  []string
	}{
		{"0.0.0.0/0", []string{"serve", "--config-test"}},
		{"10.0.0.0/8, ::/0", []string{"serve"}},
	} {
		t.Run(strings.Join(tc.args, " ")+" "+tc.value, func(t *testing.T) {
			addr := gatewaytest.FreeAddr(t)
			out, err := runUnlessServing(t, addr, tc.args, "AGENT_GATEWAY_LISTEN="+addr, "AGENT_GATEWAY_DATA_DIR="+t.TempDir(),
				"AGENT_GATEWAY_TRUSTED_PROXIES="+tc.value)
			if err == nil || !strings.Contains(out, "trusted_proxies (AGENT_GATEWAY_TRUSTED_PROXIES)") || !strings.Contains(out, "trusts every address") {
				t.Fatalf("exit %v: %s", err, out)
			}
			if strings.Contains(out, "configuration OK") {
				t.Fatalf("printed OK: %s", out)
			}
		})
	}
}

// runUnlessServing runs the binary with args and env until it exits and
// returns what it wrote and how it exited; a binary that answers /healthz
// on addr instead (it accepted the configuration) is stopped and fails
// the test.
func runUnlessServing(t *testing.T, addr string, args []string, env ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(gatewaytest.Binary(t), args...)
	cmd.Env = append(gatewaytest.CleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	probe := &http.Client{Timeout: time.Second}
	for {
		select {
		case err := <-done:
			return out.String(), err
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := probe.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the gateway started serving: %s", out.String())
		}
	}
}

// TestTrustedProxiesUnionRefused: entries that are harmless one by one
// but together trust every address (two halves per family) are refused at
// --config-test and at start, unless trust_all_forwarded is set; then the
// gateway starts, warns in its log, and believes X-Forwarded-For.
func TestTrustedProxiesUnionRefused(t *testing.T) {
	const halves = "0.0.0.0/1,128.0.0.0/1,::/1,8000::/1"
	for _, args := range [][]string{{"serve", "--config-test"}, {"serve"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			addr := gatewaytest.FreeAddr(t)
			out, err := runUnlessServing(t, addr, args, "AGENT_GATEWAY_LISTEN="+addr, "AGENT_GATEWAY_DATA_DIR="+t.TempDir(),
				"AGENT_GATEWAY_TRUSTED_PROXIES="+halves)
			if err == nil || !strings.Contains(out, "trusted_proxies: together the entries trust 0.0.0.0 through 255.255.255.255") ||
				!strings.Contains(out, "trusted_proxies: together the entries trust :: through ffff:") || strings.Contains(out, "configuration OK") {
				t.Fatalf("exit %v: %s", err, out)
			}
		})
	}
	t.Run("trust_all_forwarded", func(t *testing.T) {
		gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
			"AGENT_GATEWAY_TRUSTED_PROXIES": halves, "AGENT_GATEWAY_TRUST_ALL_FORWARDED": "true",
		}})
		if !strings.Contains(gw.Logs(), "TRUST_ALL_FORWARDED IS SET") {
			t.Fatalf("no warning at start: %s", gw.Logs())
		}
		req, _ := http.NewRequest(http.MethodGet, gw.URL+"/healthz", nil)
		req.Header.Set("X-Forwarded-For", "198.51.100.77")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(gw.Logs(), `"client_ip":"198.51.100.77"`) {
			if time.Now().After(deadline) {
				t.Fatalf("X-Forwarded-For not believed: %s", gw.Logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
