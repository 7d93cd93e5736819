package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/tcpcut"
)

// cutProxy puts a tcpcut proxy in front of target (a loopback host:port),
// closed when the test ends.
func cutProxy(t *testing.T, target string) *tcpcut.Proxy {
	t.Helper()
	p, err := tcpcut.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// outageAnswer is what one call got: status, Retry-After, the
// WWW-Authenticate challenge and the error's code and dependency.
type outageAnswer struct {
	status                   int
	retryAfter, challenge    string
	code, dependency, reason string
}

func callForOutage(t *testing.T, url, token, tool string) outageAnswer {
	t.Helper()
	return readOutage(rawCall(t, url, token, tool, map[string]any{}))
}

// readOutage is one answer as an outageAnswer.
func readOutage(resp *http.Response, body string) outageAnswer {
	a := outageAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), challenge: resp.Header.Get("WWW-Authenticate")}
	var msg struct {
		Error *struct {
			Message string
			Data    struct{ Code, Dependency string }
		}
	}
	if json.Unmarshal([]byte(body), &msg) == nil && msg.Error != nil {
		a.code, a.dependency, a.reason = msg.Error.Data.Code, msg.Error.Data.Dependency, msg.Error.Message
	}
	return a
}

// waitServed calls until the answer is not a 503 and returns it with how
// long that took, failing past limit.
func waitServed(t *testing.T, limit time.Duration, call func() outageAnswer) (outageAnswer, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		a := call()
		if a.status != http.StatusServiceUnavailable {
			return a, time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("still %+v %s after the dependency came back", a, time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStoreOutageAnsweredUnavailable: with PostgreSQL cut (through a proxy
// of the test's own; the shared server keeps running), a valid gateway
// bearer is answered 503 unavailable naming the token store, with
// Retry-After, never 401 invalid_token; the outage spends none of the
// address's refused-bearer allowance (3 here, far fewer than the calls
// made), so when the store answers again the same bearer is served within
// 2 s, not locked out.
func TestStoreOutageAnsweredUnavailable(t *testing.T) {
	dbURL, err := url.Parse(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := cutProxy(t, dbURL.Host)
	dbURL.Host = proxy.Addr()
	s := newDocStack(t, dbURL.String(), stackOptions{env: map[string]string{
		"AGENT_GATEWAY_RATELIMIT_REFUSED_BEARERS_PER_MINUTE": "3",
	}})
	endpoint := s.gw.URL + "/mcp/documents"
	call := func() outageAnswer { return callForOutage(t, endpoint, s.tokenA, "runtime_bootstrap_get") }
	outageCycle(t, proxy, 10, "token store", call)
	logs := s.gw.Logs()
	if !strings.Contains(logs, "the token store is unavailable") || !strings.Contains(logs, `"request_id":"`) {
		t.Fatalf("the cause is not logged with the request id:\n%s", logs)
	}
}

// TestRedisOutageAnsweredUnavailable: with Redis cut, an anonymous read is
// answered 503 unavailable naming the budget store, with Retry-After —
// never "budget spent" — and is served again within 2 s of Redis's
// return.
func TestRedisOutageAnsweredUnavailable(t *testing.T) {
	requireRedis(t)
	proxy := cutProxy(t, "127.0.0.1:6379")
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_REDIS_URL": "redis://" + proxy.Addr() + "/0"})
	endpoint := st.gw.URL + "/mcp/forgejo"
	call := func() outageAnswer {
		return readOutage(postRPC(t, endpoint, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": "2025-06-18"}))
	}
	outageCycle(t, proxy, 5, "budget store", call)
}

// outageCycle serves one call, cuts proxy, checks that n calls are each
// answered 503 unavailable naming dependency with Retry-After — never
// invalid_token, never "spent" — then restores it and checks that a call
// is served within 2 s (no lockout).
func outageCycle(t *testing.T, proxy *tcpcut.Proxy, n int, dependency string, call func() outageAnswer) {
	t.Helper()
	if a := call(); a.status != http.StatusOK {
		t.Fatalf("before the outage: %+v", a)
	}
	proxy.Set(tcpcut.Refuse)
	for i := range n {
		a := call()
		if a.status != http.StatusServiceUnavailable || a.code != "unavailable" || a.dependency != dependency ||
			!strings.Contains(a.reason, "the "+dependency+" is unavailable") || strings.Contains(a.reason, "spent") ||
			a.retryAfter == "" || strings.Contains(a.challenge, "invalid_token") {
			t.Fatalf("outage call %d: %+v", i, a)
		}
	}
	proxy.Set(tcpcut.Up)
	a, took := waitServed(t, 2*time.Second, call)
	if a.status != http.StatusOK {
		t.Fatalf("after the outage: %+v (a lockout?)", a)
	}
	t.Logf("served %s after the %s came back", took, dependency)
}

// TestDeploymentsOnOneRedisKeepTheirBudgets: two deployments on the same
// Redis database, each with its own ratelimit.key_prefix, spend separate
// budgets: one spending all of 127.0.0.1's reads leaves the other's
// untouched (before the prefix, both counted under "agw:budget:…", and a
// full CI run once got 429 from another gateway's traffic).
func TestDeploymentsOnOneRedisKeepTheirBudgets(t *testing.T) {
	requireRedis(t)
	env := func(prefix string) map[string]string {
		return map[string]string{
			"AGENT_GATEWAY_RATELIMIT_REDIS_URL":       "redis://127.0.0.1:6379/0",
			"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "3",
			gatewaytest.KeyPrefixEnv:                  prefix,
		}
	}
	base := gatewaytest.KeyPrefix(t)
	a := startForgejoStack(t, env(base+"a:"))
	b := startForgejoStack(t, env(base+"b:"))
	list := func(gw string) int {
		resp, _ := postRPC(t, gw+"/mcp/forgejo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
		return resp.StatusCode
	}
	for i := range 3 {
		if code := list(a.gw.URL); code != http.StatusOK {
			t.Fatalf("deployment a, read %d of 3: %d", i+1, code)
		}
	}
	if code := list(a.gw.URL); code != http.StatusTooManyRequests {
		t.Fatalf("deployment a past its budget: %d, want 429", code)
	}
	if code := list(b.gw.URL); code != http.StatusOK {
		t.Fatalf("deployment b after a spent its own budget: %d, want 200", code)
	}
}

// fileSizeLimited writes a wrapper that runs the gateway binary with its
// file-size limit (RLIMIT_FSIZE, ulimit -f in 512-byte blocks) at kib
// KiB: every file the gateway grows past it fails with EFBIG, as on a full
// disk, without root and without touching the machine's disks. The Go
// runtime ignores SIGXFSZ, so the gateway sees the error, not a signal.
func fileSizeLimited(t *testing.T, kib int) string {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "gateway-fsize")
	script := fmt.Sprintf("#!/bin/sh\nulimit -f %d\nexec %q \"$@\"\n", kib*2, gatewaytest.Binary(t))
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// TestFullDiskNamedAndLogged: with the SQLite data directory's files held
// at a size limit (a full disk, as far as the gateway can tell), a
// workflow_dispatch that cannot store its workflow answers unavailable
// naming the store (the gateway's fault, not internal_error) and its cause
// is logged once with the request id; /readyz, which now writes, turns 503
// instead of staying green on a disk that cannot write.
func TestFullDiskNamedAndLogged(t *testing.T) {
	s := newCatalogStackWith(t, storetest.SQLiteURL(t), true, stackOptions{binary: fileSizeLimited(t, 64), env: map[string]string{
		"AGENT_GATEWAY_CATALOG_DISPATCHES_PER_HOUR": "1000",
	}})
	cs := s.session(t, s.token)
	failedAt := -1
	for i := range 50 {
		out, isErr := callTool(t, cs, "workflow_dispatch", map[string]any{"profile_id": s.profile})
		if isErr {
			if e := out["error"].(map[string]any); e["code"] != "unavailable" || e["dependency"] != "store" {
				t.Fatalf("dispatch %d on a full disk: %v", i, out)
			}
			failedAt = i
			break
		}
	}
	if failedAt < 0 {
		t.Fatal("50 dispatches stored under a 64 KiB file limit: the limit did not bite")
	}
	// The gateway's log reaches the test through a pipe, after the answer
	// did: wait for the dispatch's access line, which follows the cause's.
	eventually(t, "the failed dispatch's access line", func() bool {
		return strings.Contains(s.gw.Logs(), `"outcome":"unavailable"`)
	})
	logs := s.gw.Logs()
	var faults []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "tool failed inside the gateway") && strings.Contains(line, `"tool":"workflow_dispatch"`) {
			faults = append(faults, line)
		}
	}
	if len(faults) != 1 || !regexp.MustCompile(`"request_id":"[^"]+"`).MatchString(faults[0]) || !strings.Contains(faults[0], `"error":"`) {
		t.Fatalf("want the failed dispatch's cause logged once with its request id, got %d lines:\n%s", len(faults), logs)
	}
	deadline := time.Now().Add(2*writeProbeInterval + 2*time.Second)
	for {
		resp, err := http.Get(s.gw.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d on a store that cannot write", resp.StatusCode)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("dispatch %d was the first refused", failedAt+1)
}

// writeProbeInterval is the server's bound on /readyz store writes.
const writeProbeInterval = 5 * time.Second

// TestOAuthOutageAnsweredUnavailable: with Redis cut, /oauth/register and
// /oauth/authorize are answered 503 naming the budget store, with
// Retry-After — never "too many registrations" or "too many sign-in
// attempts", which blame the caller; with PostgreSQL cut, a registration
// is answered 503 temporarily_unavailable naming the store, not 500. Both
// register again within 2 s of the dependency's return.
func TestOAuthOutageAnsweredUnavailable(t *testing.T) {
	requireRedis(t)
	dbURL, err := url.Parse(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	pg := cutProxy(t, dbURL.Host)
	redis := cutProxy(t, "127.0.0.1:6379")
	dbURL.Host = pg.Addr()
	o := startOAuthGateway(t, dbURL.String(), map[string]string{"AGENT_GATEWAY_RATELIMIT_REDIS_URL": "redis://" + redis.Addr() + "/0"})
	register := func() outageAnswer {
		resp, err := http.Post(o.gw.URL+"/oauth/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:9/cb"]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Error            string
			ErrorDescription string `json:"error_description"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		a := outageAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), code: e.Error, reason: e.ErrorDescription}
		if a.status == http.StatusCreated {
			a.status = http.StatusOK // served
		}
		return a
	}
	for _, c := range []struct {
		proxy *tcpcut.Proxy
		part  string
	}{{redis, "budget store"}, {pg, "store"}} {
		if a := register(); a.status != http.StatusOK {
			t.Fatalf("before the %s outage: %+v", c.part, a)
		}
		c.proxy.Set(tcpcut.Refuse)
		for i := range 5 {
			a := register()
			if a.status != http.StatusServiceUnavailable || a.code != "temporarily_unavailable" || a.retryAfter == "" ||
				!strings.Contains(a.reason, "the "+c.part+" is unavailable") || strings.Contains(a.reason, "too many") {
				t.Fatalf("registration %d with the %s cut: %+v", i, c.part, a)
			}
		}
		if c.part == "budget store" {
			resp, body := authorizeResponse(t, http.MethodGet, o.gw.URL, url.Values{"response_type": {"code"}}, nil)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
				!strings.Contains(body, "budget store is unavailable") || strings.Contains(body, "Too many") {
				t.Fatalf("authorize with Redis cut: %d %s", resp.StatusCode, body)
			}
		}
		c.proxy.Set(tcpcut.Up)
		if a, took := waitServed(t, 2*time.Second, register); a.status != http.StatusOK {
			t.Fatalf("after the %s outage: %+v", c.part, a)
		} else {
			t.Logf("registering again %s after the %s came back", took, c.part)
		}
	}
}

// TestOAuthTokenOutageAnsweredUnavailable: with PostgreSQL cut, a code
// exchange and a refresh are answered 503 temporarily_unavailable with
// Retry-After — never invalid_grant, invalid_client or 500 — and through
// the store's circuit breaker (its gauge shows it open: the calls after
// the first fail at once instead of each dialling the store; no other
// store call is made meanwhile), while a client ID PostgreSQL refuses is
// invalid_client and opens nothing. The outage spends nothing: the same code,
// its PKCE verifier and the same refresh token each work within 2 s of
// the store's return, and the refreshed access token is served.
func TestOAuthTokenOutageAnsweredUnavailable(t *testing.T) {
	dbURL, err := url.Parse(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	pg := cutProxy(t, dbURL.Host)
	dbURL.Host = pg.Addr()
	o := startOAuthGateway(t, dbURL.String(), map[string]string{"AGENT_GATEWAY_RATELIMIT_REFUSED_BEARERS_PER_MINUTE": "3"})
	gw := o.gw.URL
	status, clientID := registerClient(t, gw, nil)
	if status != http.StatusCreated {
		t.Fatalf("register: %d", status)
	}
	_, refreshToken := headlessTokens(t, gw, clientID)
	code, verifier := headlessCode(t, gw, clientID)
	// grant posts one token request; the access token it was given, if
	// any, goes to *access.
	grant := func(form url.Values, access *string) func() outageAnswer {
		return func() outageAnswer {
			resp, err := http.PostForm(gw+"/oauth/token", form)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error            string
				ErrorDescription string `json:"error_description"`
				AccessToken      string `json:"access_token"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			*access = body.AccessToken
			return outageAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), code: body.Error, reason: body.ErrorDescription}
		}
	}
	resource := gw + "/mcp/documents"
	var exchanged, refreshed string
	exchange := grant(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {headlessRedirect},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {resource}}, &exchanged)
	refresh := grant(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {clientID}, "resource": {resource}}, &refreshed)
	breakerOpen := func() float64 {
		_, m := get(t, o.gw.MetricsURL)
		return metricValue(t, m, "agent_gateway_dependency_breaker_open", `dependency="store"`)
	}
	// A client ID PostgreSQL cannot hold is nobody's client, not the
	// store failing: counted as a failure, anyone could open the breaker
	// and make the store look down to every caller.
	var none string
	if a := grant(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {"\xff"}}, &none)(); a.status != http.StatusUnauthorized || a.code != "invalid_client" {
		t.Fatalf("a client ID that is not UTF-8: %+v, want 401 invalid_client", a)
	}
	if open := breakerOpen(); open != 0 {
		t.Fatalf("the store breaker is open before the outage")
	}
	pg.Set(tcpcut.Refuse)
	for i := range 5 {
		for name, call := range map[string]func() outageAnswer{"code exchange": exchange, "refresh": refresh} {
			if a := call(); a.status != http.StatusServiceUnavailable || a.code != "temporarily_unavailable" || a.retryAfter == "" {
				t.Fatalf("%s %d with the store cut: %+v", name, i, a)
			}
		}
	}
	if open := breakerOpen(); open != 1 {
		t.Fatalf("the store breaker is not open after token requests failed on the store: they each waited on a dial of their own")
	}
	pg.Set(tcpcut.Up)
	for _, c := range []struct {
		name   string
		call   func() outageAnswer
		access *string
	}{{"code exchange", exchange, &exchanged}, {"refresh", refresh, &refreshed}} {
		a, took := waitServed(t, 2*time.Second, c.call)
		if a.status != http.StatusOK || *c.access == "" {
			t.Fatalf("%s after the outage: %+v (spent by the outage?)", c.name, a)
		}
		t.Logf("%s served %s after the store came back", c.name, took)
		if resp := bearerCall(t, resource, *c.access, toolsList); resp.StatusCode != http.StatusOK {
			t.Fatalf("the access token of the %s after the outage: %d", c.name, resp.StatusCode)
		}
	}
}
