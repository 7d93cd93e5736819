package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// testGateway is a gateway with a Forgejo origin and SQLite under a
// temporary directory.
func testGateway(t *testing.T) *Gateway {
	t.Helper()
	cfg := Default()
	cfg.DataDir = t.TempDir()
	cfg.ForgejoOrigin, _ = upstream.ParseOrigin("http://127.0.0.1:9")
	cfg.PublicURL = "http://127.0.0.1:8080"
	g, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestZeroKnownSeries pins the series a fresh gateway exposes at 0, and
// that the label values it pre-creates come from their owners: the paging
// tools from the toolsets (a renamed tool cannot leave a dead series
// behind), the budgets from the middleware's list, the OAuth refusals
// from the authorization server's.
func TestZeroKnownSeries(t *testing.T) {
	g := testGateway(t)
	_ = g.Handler() // registers the request series and each endpoint's budgets
	// The tools whose handlers record pages (Record.SetPage) declare it.
	if got := pagingTools(g.forgejoC, g.documentsC); !slices.Equal(got, []string{"get_pull_request_diff", "git_document_get"}) {
		t.Errorf("paging tools %v", got)
	}
	families, err := prometheus.Gatherers{g.registry, g.storeRegistry}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	budgets := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if f.GetName() == "agent_gateway_budget_rejections_total" && l.GetName() == "budget" {
					budgets[l.GetValue()] = true
				}
			}
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
		{"agent_gateway_budget_rejections_total", 7}, // read, write × 2 toolsets; ip_ceiling (Forgejo); refused_bearers, dispatch (documents)
		{"agent_gateway_github_installation_tokens_total", 3},
		{"agent_gateway_evidence_entities_total", 1},
		{"agent_gateway_pages_served_total", 2},
		{"agent_gateway_page_bytes_total", 2},
		{"agent_gateway_oauth_refusals_total", len(oauth.Refusals)},
		{"agent_gateway_oauth_client_metadata_lookups_total", len(oauth.ClientMetadataLookupResults)},
		{"agent_gateway_oauth_purge_runs_total", 3},
		{"agent_gateway_oauth_purged_rows_total", len(purgeNamed(t, g.purges, "OAuth purge").tables)},
		{"agent_gateway_workflow_purge_runs_total", 3},
		{"agent_gateway_workflow_purged_rows_total", len(purgeNamed(t, g.purges, "workflow purge").tables)},
		{"agent_gateway_upstream_requests_total", 2}, // forgejo and the default GitHub origin
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := count[tc.name]; n != tc.series {
				t.Errorf("%d series at start, want %d", n, tc.series)
			}
		})
	}
	// Every budget the middleware has is zeroed at some endpoint.
	for _, b := range middleware.BudgetNames {
		if !budgets[b] {
			t.Errorf("budget %q has no series at start", b)
		}
	}
	if len(budgets) != len(middleware.BudgetNames) {
		t.Errorf("budget series %v, want %v", budgets, middleware.BudgetNames)
	}
}

// TestEndpointBudgets: an endpoint's budgets follow what it has — a tool
// that dispatches (with the bound set), a tool that forwards the caller's
// Forgejo credential, a refused-bearer bound.
func TestEndpointBudgets(t *testing.T) {
	g := testGateway(t)
	base := middleware.BudgetOptions{DispatchPerWindow: 5}
	for _, tc := range []struct {
		name string
		c    *toolset.Toolset
		auth middleware.AuthOptions
		o    middleware.BudgetOptions
		want []string
	}{
		{"forgejo", g.forgejoC, middleware.AuthOptions{}, base, []string{"read", "write", "ip_ceiling"}},
		{"documents", g.documentsC, middleware.AuthOptions{Refused: middleware.NewRefusedBearers(middleware.BudgetOptions{RefusedBearersPerWindow: 1, Window: time.Minute})}, base,
			[]string{"read", "write", "dispatch", "refused_bearers"}},
		{"documents without a dispatch bound or a refused-bearer bound", g.documentsC, middleware.AuthOptions{}, middleware.BudgetOptions{}, []string{"read", "write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endpointBudgets(tc.c, tc.auth, tc.o); !slices.Equal(got, tc.want) {
				t.Fatalf("budgets %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMetricsDocBudgets: docs/metrics.md names exactly the middleware's
// budgets as the budget label's values.
func TestMetricsDocBudgets(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| `agent_gateway_budget_rejections_total` |") {
			row = line
		}
	}
	_, labels, ok := strings.Cut(row, "`budget` (")
	labels, _, _ = strings.Cut(labels, ")")
	var got []string
	for _, f := range strings.Split(labels, ",") {
		got = append(got, strings.Trim(strings.TrimSpace(f), "`"))
	}
	if !ok || !slices.Equal(got, middleware.BudgetNames) {
		t.Fatalf("docs/metrics.md lists budgets %v, the middleware has %v", got, middleware.BudgetNames)
	}
}
