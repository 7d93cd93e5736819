package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestOAuthGatewayWideBounds: registrations and authorizations from many
// addresses, each within its own rate, stop at the gateway-wide rate (429
// with Retry-After), and the rows they leave never pass
// oauth.max_unused_clients and oauth.max_login_sessions: the oldest go.
func TestOAuthGatewayWideBounds(t *testing.T) {
	o := startOAuthGateway(t, storetest.SQLiteURL(t), map[string]string{
		"AGENT_GATEWAY_TRUSTED_PROXIES":                  "127.0.0.1",
		"AGENT_GATEWAY_OAUTH_REGISTER_PER_MINUTE":        "2",
		"AGENT_GATEWAY_OAUTH_REGISTER_TOTAL_PER_MINUTE":  "8",
		"AGENT_GATEWAY_OAUTH_AUTHORIZE_PER_MINUTE":       "2",
		"AGENT_GATEWAY_OAUTH_AUTHORIZE_TOTAL_PER_MINUTE": "8",
		"AGENT_GATEWAY_OAUTH_MAX_UNUSED_CLIENTS":         "5",
		"AGENT_GATEWAY_OAUTH_MAX_LOGIN_SESSIONS":         "5",
	})
	from := func(i int) map[string]string {
		return map[string]string{"X-Forwarded-For": fmt.Sprintf("198.18.7.%d", i)}
	}
	created, refused := 0, 0
	var clientID string
	for i := 1; i <= 12; i++ { // one each from twelve addresses
		switch status, id := registerClient(t, o.gw.URL, from(i)); status {
		case http.StatusCreated:
			created++
			clientID = id
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("registration %d: %d", i, status)
		}
	}
	if created != 8 || refused != 4 {
		t.Fatalf("twelve addresses registered %d, refused %d: want the total of 8", created, refused)
	}
	authorized := 0
	for i := 1; i <= 12; i++ {
		params, _ := authzParams(o.gw.URL, clientID)
		resp, body := authorizeResponse(t, http.MethodGet, o.gw.URL, params, from(100+i))
		switch resp.StatusCode {
		case http.StatusFound:
			authorized++
		case http.StatusTooManyRequests:
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "in all") {
				t.Fatalf("authorization %d refused without Retry-After or reason: %s", i, body)
			}
		default:
			t.Fatalf("authorization %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if authorized != 8 {
		t.Fatalf("twelve addresses started %d sign-ins, want the total of 8", authorized)
	}
	rows, err := o.openStore(t).CountOAuthRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rows.UnusedClients != 5 || rows.LoginSessions != 5 {
		t.Fatalf("rows past the caps: %+v", rows)
	}
	_, m := get(t, o.gw.URL+"/metrics")
	for _, want := range []string{
		`agent_gateway_oauth_refusals_total{endpoint="register",reason="rate_limited_total"} 4`,
		`agent_gateway_oauth_refusals_total{endpoint="authorize",reason="rate_limited_total"} 4`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
