package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
)

// The hostile-load tests, the OAuth half: what an anonymous caller can make
// the authorization server hold is bounded (per-address limits shared through
// Redis, bounded stored parameters, expiring and purged rows), redirect URIs
// with user information and form_post answers are refused.

// oauthGateway is a gateway with OAuth configured against the test
// identity provider, and a project alice may consent for.
type oauthGateway struct {
	*docStack // dbURL, dataDir, gw, projectA and the admin CLI
	idp       *oidcprovider.Provider
}

func startOAuthGateway(t *testing.T, dbURL string, env map[string]string) *oauthGateway {
	t.Helper()
	idp := startIdP(t)
	s := &docStack{dbURL: dbURL, dataDir: t.TempDir(), canaries: &gatewaytest.Canaries{}}
	s.projectA = s.admin(t, "create-project", "--name", "project-a")["project_id"].(string)
	s.admin(t, "add-member", "--project-id", s.projectA, "--subject", "alice")
	e := oidcEnv(idp, env)
	e["AGENT_GATEWAY_DATABASE_URL"], e["AGENT_GATEWAY_DATA_DIR"] = dbURL, s.dataDir
	s.gw = gatewaytest.Start(t, gatewaytest.Options{Env: e, Canaries: s.canaries})
	idp.AddClient(oidcprovider.Client{ID: idpClientID, Secret: idpClientSecret, RedirectURIs: []string{s.gw.URL + "/oauth/callback"}})
	return &oauthGateway{docStack: s, idp: idp}
}

// openStore opens the gateway's store from the test, for row counts.
func (o *oauthGateway) openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), o.dbURL, o.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// adminList runs an admin list command and returns its records.
func (o *oauthGateway) adminList(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	code, out, errs := o.runAdmin(t, args...)
	if code != 0 {
		t.Fatalf("admin %v: exit %d\n%s", args, code, errs)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("admin %v: %v\n%s", args, err, out)
	}
	return list
}

// authorizeResponse sends one authorization request, not following
// redirects.
func authorizeResponse(t *testing.T, method, gwURL string, params url.Values, headers map[string]string) (*http.Response, string) {
	t.Helper()
	var req *http.Request
	if method == http.MethodPost {
		req, _ = http.NewRequest(method, gwURL+"/oauth/authorize", strings.NewReader(params.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req, _ = http.NewRequest(method, gwURL+"/oauth/authorize?"+params.Encode(), nil)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b)
}

// loginCookie is the login session secret an authorize answer set.
func loginCookie(resp *http.Response) string {
	for _, c := range resp.Cookies() {
		if c.Name == "agw_login" && c.Value != "" {
			return c.Value
		}
	}
	return ""
}

// TestOAuthAuthorizeBounds: 15.5 KB of junk per
// authorization request stores only the known parameters, and past the
// per-address limit the answer is 429 with Retry-After and nothing is
// stored.
func TestOAuthAuthorizeBounds(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), map[string]string{"AGENT_GATEWAY_OAUTH_AUTHORIZE_PER_MINUTE": "5"})
	st := o.openStore(t)
	_, clientID := registerClient(t, o.gw.URL, nil)
	for i := 0; i < 5; i++ {
		params, _ := authzParams(o.gw.URL, clientID)
		for j := 0; j < 20; j++ {
			params.Set(fmt.Sprintf("junk%02d", j), strings.Repeat("x", 775))
		}
		resp, body := authorizeResponse(t, http.MethodPost, o.gw.URL, params, nil)
		cookie := loginCookie(resp)
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), o.idp.Issuer()) || cookie == "" {
			t.Fatalf("authorization %d: %d %q %s", i, resp.StatusCode, resp.Header.Get("Location"), body)
		}
		ls, err := st.GetLoginSession(context.Background(), store.HashToken(cookie))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ls.AuthorizeQuery, "junk") || len(ls.AuthorizeQuery) > 1024 {
			t.Fatalf("stored authorization request: %d bytes: %.200s", len(ls.AuthorizeQuery), ls.AuthorizeQuery)
		}
	}
	params, _ := authzParams(o.gw.URL, clientID)
	resp, body := authorizeResponse(t, http.MethodGet, o.gw.URL, params, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || loginCookie(resp) != "" {
		t.Fatalf("sixth authorization in a minute: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if c, err := st.CountOAuthRows(context.Background()); err != nil || c.LoginSessions != 5 {
		t.Fatalf("login sessions stored: %+v %v, want 5", c, err)
	}
	_, exposition := get(t, o.gw.URL+"/metrics")
	if metricValue(t, exposition, "agent_gateway_oauth_refusals_total", `endpoint="authorize",reason="rate_limited"`) != 1 {
		t.Fatalf("the refusal is not counted:\n%s", grepLines(exposition, "agent_gateway_oauth"))
	}
}

// TestOAuthAuthorizeRefusesUserinfo: a redirect URI
// with user information is refused at /oauth/authorize as at
// registration, on a page and without a redirect, even where it would
// match a registered loopback URI.
func TestOAuthAuthorizeRefusesUserinfo(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	for _, uri := range []string{"http://evil@127.0.0.1:9999/callback", "http://evil@127.0.0.1:9/callback", "http://a:b@127.0.0.1:9/callback"} {
		status, _ := registerClientURI(t, o.gw.URL, uri)
		if status != http.StatusBadRequest {
			t.Fatalf("registration of %s: %d, want 400", uri, status)
		}
		_, clientID := registerClient(t, o.gw.URL, nil)
		params, _ := authzParams(o.gw.URL, clientID)
		params.Set("redirect_uri", uri)
		resp, body := authorizeResponse(t, http.MethodGet, o.gw.URL, params, nil)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || loginCookie(resp) != "" ||
			!strings.Contains(body, "user information") {
			t.Fatalf("authorize with %s: %d Location=%q\n%s", uri, resp.StatusCode, resp.Header.Get("Location"), body)
		}
	}
}

// registerClientURI registers a client with one redirect URI.
func registerClientURI(t *testing.T, gwURL, uri string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"redirect_uris": []string{uri}})
	resp, err := http.Post(gwURL+"/oauth/register", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body)
}

// TestOAuthAuthorizeRefusesFormPost: fosite's
// form_post answer is a page with inline script; the gateway answers
// response_mode=form_post with its own unsupported_response_mode page
// (the client is unverified, so nothing is redirected before consent),
// never a form or a script, and with a CSP that allows none.
func TestOAuthAuthorizeRefusesFormPost(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), nil)
	_, clientID := registerClient(t, o.gw.URL, nil)
	for _, tc := range []struct{ name, clientID, code string }{
		{"registered client", clientID, "unsupported_response_mode"}, {"unknown client", "cli_unknown", "unsupported_response_mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params, _ := authzParams(o.gw.URL, tc.clientID)
			params.Set("response_mode", "form_post")
			params.Set("scope", "no-such-scope") // fosite's own error path, too
			resp, body := authorizeResponse(t, http.MethodGet, o.gw.URL, params, nil)
			csp := resp.Header.Get("Content-Security-Policy")
			if strings.Contains(body, "<script") || strings.Contains(body, "<form") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
				t.Fatalf("%d CSP %q:\n%s", resp.StatusCode, csp, body)
			}
			if resp.StatusCode/100 != 4 || resp.Header.Get("Location") != "" || !strings.Contains(body, "<code>"+tc.code+"</code>") {
				t.Fatalf("want a %s page, got %d %q:\n%s", tc.code, resp.StatusCode, resp.Header.Get("Location"), body)
			}
		})
	}
}

// TestOAuthClientsExpireAndAdmin: admin list-clients
// and delete-client; a client that never obtained a token is purged after
// oauth.unused_client_ttl, one that did is kept; deleting a client stops
// its tokens.
func TestOAuthClientsExpireAndAdmin(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), map[string]string{
		// Long enough for the used client's login to finish on a busy
		// machine before its registration would count as unused.
		"AGENT_GATEWAY_OAUTH_UNUSED_CLIENT_TTL": "8s", "AGENT_GATEWAY_OAUTH_PURGE_INTERVAL": "1s",
	})
	_, used := registerClient(t, o.gw.URL, nil)
	access, _ := headlessTokens(t, o.gw.URL, used)
	o.canaries.Add("an access token", access)
	_, unused1 := registerClient(t, o.gw.URL, nil)
	_, unused2 := registerClient(t, o.gw.URL, nil)

	all := o.adminList(t, "list-clients")
	if len(all) != 3 || all[0]["client_id"] != used || all[0]["first_token_at"] == nil {
		t.Fatalf("list-clients: %v", all)
	}
	if u := o.adminList(t, "list-clients", "--unused"); len(u) != 2 || u[0]["client_id"] != unused1 || u[1]["client_id"] != unused2 {
		t.Fatalf("list-clients --unused: %v", u)
	}
	if d := o.admin(t, "delete-client", "--client-id", unused2); d["deleted"] != true {
		t.Fatalf("delete-client: %v", d)
	}
	if code, _, errs := o.runAdmin(t, "delete-client", "--client-id", unused2); code == 0 || !strings.Contains(errs, "does not exist") {
		t.Fatalf("deleting it again: exit %d %s", code, errs)
	}

	// The purge removes the unused client, not the used one.
	deadline := time.Now().Add(40 * time.Second)
	for len(o.adminList(t, "list-clients", "--unused")) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the unused client was not purged:\n%s", o.gw.Logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if all := o.adminList(t, "list-clients"); len(all) != 1 || all[0]["client_id"] != used {
		t.Fatalf("after the purge: %v", all)
	}
	if resp, _ := rawCall(t, o.gw.URL+"/mcp/documents", access, "runtime_bootstrap_get", map[string]any{}); resp.StatusCode != http.StatusOK {
		t.Fatalf("the used client's token after the purge: %d", resp.StatusCode)
	}
	// Deleting a client stops its tokens at once.
	o.admin(t, "delete-client", "--client-id", used)
	if resp, _ := rawCall(t, o.gw.URL+"/mcp/documents", access, "runtime_bootstrap_get", map[string]any{}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a deleted client's token: %d, want 401", resp.StatusCode)
	}
}

// forwardedFor is a random client address, sent through the trusted
// loopback proxy, so that this test's per-address limits in the shared
// Redis are its own.
func forwardedFor() map[string]string {
	return map[string]string{"X-Forwarded-For": fmt.Sprintf("198.18.%d.%d", rand.IntN(256), 1+rand.IntN(254))}
}

// startOAuthReplicas starts two gateways on one PostgreSQL database and
// one Redis, with OAuth configured, trusting the loopback proxy, each with
// its own metrics listener (MetricsURL).
func startOAuthReplicas(t *testing.T, env map[string]string) (*oauthGateway, *gatewaytest.Process) {
	t.Helper()
	requireRedis(t)
	e := map[string]string{"AGENT_GATEWAY_RATELIMIT_REDIS_URL": "redis://127.0.0.1:6379/0", "AGENT_GATEWAY_TRUSTED_PROXIES": "127.0.0.1"}
	for k, v := range env {
		e[k] = v
	}
	e["AGENT_GATEWAY_METRICS_LISTEN"] = gatewaytest.FreeAddr(t)
	a := startOAuthGateway(t, storetest.PostgresURL(t), e)
	eb := oidcEnv(a.idp, e)
	eb["AGENT_GATEWAY_DATABASE_URL"], eb["AGENT_GATEWAY_DATA_DIR"] = a.dbURL, a.dataDir
	eb["AGENT_GATEWAY_METRICS_LISTEN"] = gatewaytest.FreeAddr(t)
	b := gatewaytest.Start(t, gatewaytest.Options{Env: eb, Canaries: a.canaries})
	a.idp.AddClient(oidcprovider.Client{ID: idpClientID, Secret: idpClientSecret,
		RedirectURIs: []string{a.gw.URL + "/oauth/callback", b.URL + "/oauth/callback"}})
	return a, b
}

// TestReplicasShareOAuthLimits: the per-address
// limits of /oauth/register and /oauth/authorize are one limit across
// replicas (Redis), not one per replica.
func TestReplicasShareOAuthLimits(t *testing.T) {
	a, b := startOAuthReplicas(t, map[string]string{
		"AGENT_GATEWAY_OAUTH_REGISTER_PER_MINUTE": "4", "AGENT_GATEWAY_OAUTH_AUTHORIZE_PER_MINUTE": "4",
	})
	from := forwardedFor()
	var clientID string
	for i, gw := range []string{a.gw.URL, b.URL, a.gw.URL, b.URL} {
		status, id := registerClient(t, gw, from)
		if status != http.StatusCreated {
			t.Fatalf("registration %d within the limit: %d", i, status)
		}
		clientID = id
	}
	if status, _ := registerClient(t, b.URL, from); status != http.StatusTooManyRequests {
		t.Fatalf("B accepted a registration beyond the limit spent across A and B: %d", status)
	}
	if status, _ := registerClient(t, b.URL, forwardedFor()); status != http.StatusCreated {
		t.Fatalf("another address is refused too: %d", status)
	}
	for i, gw := range []string{a.gw.URL, b.URL, a.gw.URL, b.URL} {
		params, _ := authzParams(gw, clientID)
		if resp, body := authorizeResponse(t, http.MethodGet, gw, params, from); resp.StatusCode != http.StatusFound {
			t.Fatalf("authorization %d within the limit: %d %s", i, resp.StatusCode, body)
		}
	}
	params, _ := authzParams(a.gw.URL, clientID)
	if resp, _ := authorizeResponse(t, http.MethodGet, a.gw.URL, params, from); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("A accepted an authorization beyond the limit spent across A and B: %d", resp.StatusCode)
	}
}

// TestReplicasPurgeOAuth: two replicas purge one
// database every second; expired login sessions and unused clients go,
// each deleted exactly once between the two, and nothing in use goes.
func TestReplicasPurgeOAuth(t *testing.T) {
	a, b := startOAuthReplicas(t, map[string]string{
		// Long enough for a headless login on a busy machine.
		"AGENT_GATEWAY_OAUTH_UNUSED_CLIENT_TTL": "8s", "AGENT_GATEWAY_OAUTH_LOGIN_TTL": "5s",
		"AGENT_GATEWAY_OAUTH_PURGE_INTERVAL": "1s",
	})
	st := a.openStore(t)
	ctx := context.Background()
	_, used := registerClient(t, a.gw.URL, forwardedFor())
	access, _ := headlessTokens(t, a.gw.URL, used)
	a.canaries.Add("an access token", access)
	_, unused := registerClient(t, a.gw.URL, forwardedFor())
	params, _ := authzParams(b.URL, unused)
	if resp, _ := authorizeResponse(t, http.MethodGet, b.URL, params, forwardedFor()); resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize on B: %d", resp.StatusCode)
	}
	if c, err := st.CountOAuthRows(ctx); err != nil || c.UnusedClients != 1 || c.LoginSessions != 1 {
		t.Fatalf("rows before the purge: %+v %v", c, err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		c, err := st.CountOAuthRows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.UnusedClients == 0 && c.LoginSessions == 0 {
			if c.Clients != 1 || c.Tokens != 2 {
				t.Fatalf("the purge took rows in use: %+v", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not purged: %+v\nA:\n%s\nB:\n%s", c, a.gw.Logs(), b.Logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := st.GetClient(ctx, used); err != nil {
		t.Fatalf("the used client: %v", err)
	}
	if resp, _ := rawCall(t, b.URL+"/mcp/documents", access, "runtime_bootstrap_get", map[string]any{}); resp.StatusCode != http.StatusOK {
		t.Fatalf("the used client's token on B after the purge: %d", resp.StatusCode)
	}
	time.Sleep(1500 * time.Millisecond) // both have purged at least once more
	deleted := map[string]float64{}
	for _, gw := range []string{a.gw.MetricsURL, b.MetricsURL} {
		_, exposition := get(t, gw)
		if metricValue(t, exposition, "agent_gateway_oauth_purge_runs_total", `outcome="purged"`) < 1 ||
			metricValue(t, exposition, "agent_gateway_oauth_purge_runs_total", `outcome="failed"`) != 0 {
			t.Fatalf("%s purge runs:\n%s", gw, grepLines(exposition, "agent_gateway_oauth_purge"))
		}
		for _, table := range []string{"clients", "login_sessions"} {
			deleted[table] += metricValue(t, exposition, "agent_gateway_oauth_purged_rows_total", `table="`+table+`"`)
		}
	}
	if deleted["clients"] != 1 || deleted["login_sessions"] != 1 {
		t.Fatalf("rows purged across both replicas: %v, want each row once", deleted)
	}
	for _, logs := range []string{a.gw.Logs(), b.Logs()} {
		if strings.Contains(logs, "OAuth purge failed") {
			t.Fatalf("a purge failed:\n%s", logs)
		}
	}
}

// metricValue is the value of one series in a Prometheus exposition: the
// first of name's series whose labels contain labels, or with labels ""
// the unlabelled series; 0 when absent.
func metricValue(t *testing.T, exposition, name, labels string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{([^}]*)\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(exposition, -1) {
		if (labels == "" && m[1] == "") || (labels != "" && strings.Contains(m[1], labels)) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return 0
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
