package e2e

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// clientMetadataEnv is the gateway environment that lets it fetch client
// metadata documents from srv, a loopback TLS server: its host and port
// allowed, loopback allowed, its certificate trusted (SSL_CERT_FILE), and
// extraPorts allowed too.
func clientMetadataEnv(t *testing.T, srv *httptest.Server, extraPorts ...int) map[string]string {
	t.Helper()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := []string{strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)}
	for _, p := range extraPorts {
		ports = append(ports, strconv.Itoa(p))
	}
	return map[string]string{
		"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_HOSTS":          "127.0.0.1",
		"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK": "true",
		"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_PORTS":          strings.Join(ports, ","),
		"SSL_CERT_FILE": caFile,
	}
}

// TestOAuthClientMetadataFlood (CIMD fetches unbounded, and refusals
// naming what the fetch met) through the binary: whatever keeps a
// client_id URL's document from being used — a 404, a refused connection,
// a port not allowed — the caller gets the same invalid_client words, and
// the log says why; one address flooding /oauth/token and /oauth/revoke
// with ever new client_id URLs (and ports not allowed) makes at most its
// fetch rate of fetches, is answered 429 with Retry-After past it, never
// connects to a port not allowed, and the metrics count it all.
func TestOAuthClientMetadataFlood(t *testing.T) {
	start := time.Now()
	var fetches atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if strings.HasPrefix(r.URL.Path, "/missing/") {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":[%q]}`, srv.URL+r.URL.Path, headlessRedirect)
	}))
	t.Cleanup(srv.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close() // nothing listens there: connection refused
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close() })
	var probed atomic.Int32
	go func() {
		for {
			c, err := probe.Accept()
			if err != nil {
				return
			}
			probed.Add(1)
			c.Close()
		}
	}()
	probePort := probe.Addr().(*net.TCPAddr).Port
	const rate = 4
	env := clientMetadataEnv(t, srv, closedPort)
	env["AGENT_GATEWAY_OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE"] = strconv.Itoa(rate)
	env["AGENT_GATEWAY_LOG_LEVEL"] = "debug"
	o := startOAuthGateway(t, storetest.SQLiteURL(t), env)

	token := func(clientID string) (int, map[string]any) {
		return tokenGrant(t, o.gw.URL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {clientID}})
	}
	const generic = "The client metadata document could not be used; the gateway's log says why."
	for _, tc := range []struct{ name, clientID, logged string }{
		{"not found", srv.URL + "/missing/client.json", "status 404"},
		{"connection refused", fmt.Sprintf("https://127.0.0.1:%d/client.json", closedPort), "connection refused"},
		{"port not allowed", fmt.Sprintf("https://127.0.0.1:%d/client.json", probePort), "client_metadata_ports"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // the second from the cache, or refused before any lookup
				if st, body := token(tc.clientID); st != http.StatusUnauthorized || body["error"] != "invalid_client" || body["error_description"] != generic {
					t.Fatalf("token: %d %v, want 401 invalid_client %q", st, body, generic)
				}
			}
			params, _ := authzParams(o.gw.URL, tc.clientID)
			resp, page := authorizeResponse(t, http.MethodGet, o.gw.URL, params, nil)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "could not be used") || strings.Contains(page, tc.logged) {
				t.Fatalf("authorize: %d, want 401 and the generic words, not %q:\n%s", resp.StatusCode, tc.logged, page)
			}
			if !strings.Contains(o.gw.Logs(), tc.logged) {
				t.Fatalf("the log does not say %q", tc.logged)
			}
		})
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("the missing document was fetched %d times, want 1 (the failure cached)", n)
	}

	// The flood: two fetches of the rate are spent above.
	answers := map[string]int{}
	for i := range 60 {
		id := fmt.Sprintf("%s/flood/%d.json", srv.URL, i)
		if i%3 == 2 {
			id = fmt.Sprintf("https://127.0.0.1:%d/flood/%d.json", probePort, i)
		}
		var resp *http.Response
		var err error
		if i%2 == 0 {
			resp, err = http.PostForm(o.gw.URL+"/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {id}})
		} else {
			resp, err = http.PostForm(o.gw.URL+"/oauth/revoke", url.Values{"token": {"x"}, "client_id": {id}})
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		answers[strconv.Itoa(resp.StatusCode)]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	// Counts of a sliding one-minute window: at most the rate in the
	// gateway's first minute, one more rate for each minute after.
	bound := rate * (1 + int(time.Since(start)/time.Minute))
	outbound := int(fetches.Load()) + 1 // the refused connection was one too
	if outbound > bound || answers["429"] == 0 || probed.Load() != 0 {
		t.Fatalf("flood: %d outbound fetches (bound %d), answers %v, %d connections to a port not allowed", outbound, bound, answers, probed.Load())
	}
	_, exposition := get(t, o.gw.URL+"/metrics")
	m := func(result string) int {
		return int(metricValue(t, exposition, "agent_gateway_oauth_client_metadata_lookups_total", `result="`+result+`"`))
	}
	if made := m("fetched") + m("fetch_failed"); made != outbound || m("rate_limited_address") == 0 || m("refused_url") == 0 || m("cached_failure") == 0 {
		t.Fatalf("metrics: %d fetches counted (made %d):\n%s", made, outbound, grepLines(exposition, "client_metadata"))
	}
}
