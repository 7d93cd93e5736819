package e2e

import (
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// metricsConnCap is the metrics listener's connection cap (docs/metrics.md).
const metricsConnCap = 16

// TestMetricsListenerConnectionCap: the metrics listener serves at most
// metricsConnCap connections at once; with that many held open by a
// caller that sends nothing, a scrape waits (the cap holds), and once they
// close it is served again. The API listener is not affected.
func TestMetricsListenerConnectionCap(t *testing.T) {
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
		"AGENT_GATEWAY_METRICS_LISTEN": gatewaytest.FreeAddr(t),
		// Long enough that the held connections outlive the scrape below.
		"AGENT_GATEWAY_HTTP_READ_HEADER_TIMEOUT": "30s",
	}})
	u, err := url.Parse(gw.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() error {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(gw.MetricsURL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := scrape(); err != nil {
		t.Fatalf("scrape before: %v", err)
	}
	held := make([]net.Conn, 0, metricsConnCap)
	for range metricsConnCap {
		c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if err := scrape(); err == nil {
		t.Fatalf("a scrape was served with %d connections held: no cap", metricsConnCap)
	}
	resp, err := http.Get(gw.URL + "/healthz")
	if err != nil {
		t.Fatalf("API listener: %v", err)
	}
	resp.Body.Close()
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for scrape() != nil {
		if time.Now().After(deadline) {
			t.Fatal("scrapes not served again after the held connections closed")
		}
	}
}
