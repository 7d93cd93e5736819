package server

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// TestZeroKnownSeries pins the series a fresh gateway exposes at 0, and
// that the label values it pre-creates are real: the paging tools are
// catalog tools, so a renamed tool cannot leave a dead series behind.
func TestZeroKnownSeries(t *testing.T) {
	cfg := Default()
	cfg.DataDir = t.TempDir()
	cfg.ForgejoOrigin, _ = upstream.ParseOrigin("http://127.0.0.1:9")
	cfg.PublicURL = "http://127.0.0.1:8080"
	g, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_ = g.Handler() // registers the request series
	for _, tool := range pagingTools {
		if !g.knownTool(tool) {
			t.Errorf("paging tool %q is not a catalog tool", tool)
		}
	}
	families, err := prometheus.Gatherers{g.registry, g.storeRegistry}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 && strings.HasPrefix(f.GetName(), "agent_gateway_") {
				t.Errorf("%s starts at %v", f.GetName(), v)
			}
			count[f.GetName()]++
		}
	}
	for _, tc := range []struct {
		name   string
		series int
	}{
		{"agent_gateway_budget_rejections_total", 7}, // read, write × 2 catalogues; ip_ceiling; refused_bearers; dispatch
		{"agent_gateway_github_installation_tokens_total", 3},
		{"agent_gateway_evidence_entities_total", 1},
		{"agent_gateway_pages_served_total", len(pagingTools)},
		{"agent_gateway_page_bytes_total", len(pagingTools)},
		{"agent_gateway_oauth_refusals_total", len(oauthRefusalSeries)},
		{"agent_gateway_oauth_client_metadata_lookups_total", len(oauth.ClientMetadataLookupResults)},
		{"agent_gateway_oauth_purge_runs_total", 3},
		{"agent_gateway_oauth_purged_rows_total", len(purgeTables)},
		{"agent_gateway_workflow_purge_runs_total", 3},
		{"agent_gateway_workflow_purged_rows_total", len(workflowPurgeTables)},
		{"agent_gateway_upstream_requests_total", 2}, // forgejo and the default GitHub origin
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := count[tc.name]; n != tc.series {
				t.Errorf("%d series at start, want %d", n, tc.series)
			}
		})
	}
}
