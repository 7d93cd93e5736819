package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStoreSeriesOnlyOnMetricsListener: the OAuth row counts (rows left
// and rows purged) are in the metrics listener's exposition only; /metrics
// on the API listener, which anyone can reach when metrics.listen is
// unset, has the rest (refusals, purge runs) but not them, and with
// metrics.listen set the API listener serves no /metrics at all.
func TestStoreSeriesOnlyOnMetricsListener(t *testing.T) {
	scrape := func(t *testing.T, h http.Handler) (int, string) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return w.Code, w.Body.String()
	}
	for _, metricsListen := range []string{"", "127.0.0.1:0"} {
		t.Run("metrics.listen="+metricsListen, func(t *testing.T) {
			cfg := Default()
			cfg.DataDir = t.TempDir()
			cfg.PublicURL = "http://127.0.0.1:8080"
			cfg.MetricsListen = metricsListen
			g, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			purgeNamed(t, g.purges, "OAuth purge").tick(context.Background(), g.log) // sets the row gauges
			code, api := scrape(t, g.Handler())
			switch {
			case metricsListen != "" && code != http.StatusNotFound:
				t.Fatalf("API /metrics with metrics.listen set: %d", code)
			case metricsListen == "" && (code != http.StatusOK || !strings.Contains(api, "\nagent_gateway_oauth_purge_runs_total")):
				t.Fatalf("API /metrics: %d\n%s", code, api)
			}
			for _, name := range []string{"agent_gateway_oauth_rows", "agent_gateway_oauth_purged_rows_total", "agent_gateway_workflow_purged_rows_total"} {
				if strings.Contains(api, name) {
					t.Errorf("the API listener's /metrics shows %s", name)
				}
			}
			code, full := scrape(t, g.MetricsHandler())
			for _, want := range []string{`agent_gateway_oauth_rows{table="clients"} 0`, `agent_gateway_oauth_purged_rows_total{table="clients"} 0`, `agent_gateway_workflow_purged_rows_total{table="workflows"} 0`, "\nagent_gateway_oauth_purge_runs_total"} {
				if code != http.StatusOK || !strings.Contains(full, want) {
					t.Errorf("the metrics listener's exposition lacks %s (%d)", want, code)
				}
			}
		})
	}
}
