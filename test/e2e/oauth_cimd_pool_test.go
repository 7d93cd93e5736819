package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestOAuthClientMetadataJunkCannotDrainPool: twelve addresses, each
// within its own fetch rate, send client_id URLs whose documents fail;
// they spend only their own rates, so a real client's first document
// after them is still fetched (not 429), though the total pool is
// smaller than the junk.
func TestOAuthClientMetadataJunkCannotDrainPool(t *testing.T) {
	var junk, good atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/junk/") {
			junk.Add(1)
			http.NotFound(w, r)
			return
		}
		good.Add(1)
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":[%q]}`, srv.URL+r.URL.Path, headlessRedirect)
	}))
	t.Cleanup(srv.Close)
	env := clientMetadataEnv(t, srv)
	env["AGENT_GATEWAY_TRUSTED_PROXIES"] = "127.0.0.1"
	env["AGENT_GATEWAY_OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE"] = "3"
	env["AGENT_GATEWAY_OAUTH_CLIENT_METADATA_HOST_FETCHES_PER_MINUTE"] = "5"
	env["AGENT_GATEWAY_OAUTH_CLIENT_METADATA_TOTAL_FETCHES_PER_MINUTE"] = "5"
	o := startOAuthGateway(t, storetest.SQLiteURL(t), env)

	token := func(from, clientID string) int {
		req, _ := http.NewRequest(http.MethodPost, o.gw.URL+"/oauth/token",
			strings.NewReader(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {clientID}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", from)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for a := range 12 {
		for i := range 3 {
			if st := token(fmt.Sprintf("198.18.9.%d", a+1), fmt.Sprintf("%s/junk/%d-%d.json", srv.URL, a, i)); st == http.StatusTooManyRequests {
				t.Fatalf("junk %d-%d within its address's rate: 429", a, i)
			}
		}
	}
	if junk.Load() != 36 {
		t.Fatalf("junk fetches %d, want 36", junk.Load())
	}
	if st := token("198.51.100.44", srv.URL+"/client.json"); st == http.StatusTooManyRequests || good.Load() != 1 {
		t.Fatalf("a real client's first document after the junk: %d, %d fetches", st, good.Load())
	}
	_, m := get(t, o.gw.URL+"/metrics")
	for _, want := range []string{
		`agent_gateway_oauth_client_metadata_lookups_total{result="fetch_failed"} 36`,
		`agent_gateway_oauth_client_metadata_lookups_total{result="fetched"} 1`,
		`agent_gateway_oauth_client_metadata_lookups_total{result="rate_limited_total"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
