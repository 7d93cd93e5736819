package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// documentedMetrics is every series docs/metrics.md documents; the test
// fails when one is missing from a live scrape, so the list cannot rot.
var documentedMetrics = []string{
	"agent_gateway_build_info",
	"agent_gateway_http_requests_total",
	"agent_gateway_http_request_duration_seconds",
	"agent_gateway_upstream_requests_total",
	"agent_gateway_upstream_response_header_seconds",
	"agent_gateway_evidence_entities_total",
	"agent_gateway_evidence_verified_bytes_total",
	"agent_gateway_pages_served_total",
	"agent_gateway_page_bytes_total",
	"agent_gateway_budget_rejections_total",
	"agent_gateway_github_installation_tokens_total",
	"agent_gateway_oauth_refusals_total",
	"agent_gateway_oauth_client_metadata_lookups_total",
	"agent_gateway_oauth_purge_runs_total",
	"agent_gateway_oauth_purged_rows_total",
	"agent_gateway_oauth_rows",
	"agent_gateway_workflow_purge_runs_total",
	"agent_gateway_workflow_purged_rows_total",
	"agent_gateway_open_connections",
	"agent_gateway_requests_in_flight",
	"agent_gateway_request_body_bytes_buffered",
	"agent_gateway_load_refusals_total",
	"agent_gateway_idle_connections_closed_total",
	"agent_gateway_stalled_requests_evicted_total",
	"agent_gateway_http2_streams_reset_total",
	"agent_gateway_http2_connections_closed_total",
	"agent_gateway_http2_addresses_cut_off_total",
	// agent_gateway_diff_verified_bytes_top has series only once a minute
	// with diff reads has ended (handlers/forgejotools TestVerifiedVolume).
}

// TestMetricsDocumented exercises every toolset, scrapes /metrics on the
// metrics listener, checks it with promtool, finds every documented
// series, and proves no label carries an owner, repository, path or
// credential.
func TestMetricsDocumented(t *testing.T) {
	emu, d := startDemoEmulator(t)
	docs := newDocStack(t, storetest.SQLiteURL(t), stackOptions{env: map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN":            emu.URL(),
		"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "30",
		"AGENT_GATEWAY_METRICS_LISTEN":            gatewaytest.FreeAddr(t),
	}})
	gw := docs.gw

	fj := gw.Connect(t, "/mcp/forgejo", d.ReaderToken)
	callTool(t, fj, "get_repository", map[string]any{"owner": d.Owner, "repo": d.PublicRepo})
	callTool(t, fj, "get_repository", map[string]any{"owner": d.Owner, "repo": "no-such-repo"})
	if page, out := callDiff(t, fj, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull}); page == nil {
		t.Fatalf("diff page: %v", out)
	}
	ds := gw.Connect(t, "/mcp/documents", docs.tokenA)
	callTool(t, ds, "git_document_get", map[string]any{"source_id": docs.sources[docs.docs.Runtime]})
	callTool(t, ds, "git_document_get", map[string]any{"source_id": docs.sources[docs.docs.Readme]})
	for i := 0; i < 40; i++ { // spend the anonymous read budget
		postRPC(t, gw.URL+"/mcp/forgejo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	}
	for i := 0; i < 21; i++ { // spend the registration limit (20 a minute)
		postRPC(t, gw.URL+"/oauth/register", `{"redirect_uris":["http://127.0.0.1:9/cb"]}`, nil)
	}

	if code, _ := get(t, gw.URL+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics on the API listener with metrics.listen set: %d", code)
	}
	code, exposition := get(t, gw.MetricsURL)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, name := range documentedMetrics {
		if !strings.Contains(exposition, "\n"+name) {
			t.Errorf("documented series %s is missing from /metrics", name)
		}
	}
	for _, want := range []string{
		`agent_gateway_pages_served_total{tool="get_pull_request_diff"} 1`,
		`agent_gateway_pages_served_total{tool="git_document_get"} 2`,
		`agent_gateway_evidence_entities_total{result="verified"} 1`,
		`agent_gateway_github_installation_tokens_total{event="minted"} 1`,
		`agent_gateway_github_installation_tokens_total{event="cache_hit"} 1`,
		`outcome="not_found"`,
		`agent_gateway_oauth_refusals_total{endpoint="register",reason="rate_limited"} 1`,
	} {
		if !strings.Contains(exposition, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Budget series exist at 0 from the start: the spent budget must have
	// moved this one.
	if n := metricValue(t, exposition, "agent_gateway_budget_rejections_total", `budget="read",toolset="agent-gateway-forgejo"`); n < 1 {
		t.Errorf("agent_gateway_budget_rejections_total for the spent read budget is %v", n)
	}
	// Bounded labels: no owner, repository, path, source, project or token
	// in any label value.
	values := labelValues(exposition)
	for _, secret := range []string{d.Owner, d.PublicRepo, "no-such-repo", docs.docs.Runtime, docs.docs.Readme,
		docs.projectA, docs.sources[docs.docs.Runtime], d.ReaderToken, docs.tokenA, docsOwner} {
		for _, v := range values {
			if v == secret || (len(secret) > 12 && strings.Contains(v, secret)) {
				t.Errorf("/metrics has the label value %q carrying %q", v, secret)
			}
		}
	}
	if strings.Contains(exposition, d.ReaderToken) || strings.Contains(exposition, docs.tokenA) {
		t.Error("/metrics carries a caller's token")
	}
	promtoolCheck(t, exposition)
}

// promtoolCheck runs `promtool check metrics` (Debian package prometheus;
// required under CI=true) on an exposition.
func promtoolCheck(t *testing.T, exposition string) {
	t.Helper()
	path, ok := promtool(t)
	if !ok {
		t.Skip("promtool not installed")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// promtool finds promtool (Debian package prometheus). It is required
// under CI=true; elsewhere ok is false when it is missing, and the caller
// says what goes unchecked.
func promtool(t *testing.T) (path string, ok bool) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is required in CI (Debian package prometheus)")
		}
		return "", false
	}
	return path, true
}

// labelValues returns every label value of an exposition's samples.
func labelValues(exposition string) []string {
	var out []string
	for _, line := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if open < 0 || end < open {
			continue
		}
		for _, pair := range strings.Split(line[open+1:end], ",") {
			if _, v, ok := strings.Cut(pair, "="); ok {
				out = append(out, strings.Trim(v, `"`))
			}
		}
	}
	return out
}

// storeSeries count what the store holds; the metrics listener alone
// serves them (docs/metrics.md).
var storeSeries = []string{"agent_gateway_oauth_rows", "agent_gateway_oauth_purged_rows_total", "agent_gateway_workflow_purged_rows_total"}

// TestMetricsRowCountsPrivate: without metrics.listen, /metrics on the
// API listener, which every caller can reach, serves the OAuth refusals
// and purge runs but not the OAuth row counts; with it, the API listener
// has no /metrics and the metrics listener has the row counts.
func TestMetricsRowCountsPrivate(t *testing.T) {
	// The purge runs at start, on its own goroutine, and sets the row
	// gauges: only once it has run does their absence on the API listener
	// mean anything, and their presence on the metrics listener show.
	purgedOnce := `agent_gateway_oauth_purge_runs_total{outcome="purged"} 1`
	single := gatewaytest.Start(t, gatewaytest.Options{})
	var code int
	var public string
	eventually(t, "the first OAuth purge on the only listener", func() bool {
		code, public = get(t, single.URL+"/metrics")
		return strings.Contains(public, purgedOnce)
	})
	if code != http.StatusOK || !strings.Contains(public, "\nagent_gateway_oauth_purge_runs_total") ||
		!strings.Contains(public, "\nagent_gateway_oauth_refusals_total") {
		t.Fatalf("/metrics on the only listener: %d", code)
	}
	split := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{"AGENT_GATEWAY_METRICS_LISTEN": gatewaytest.FreeAddr(t)}})
	if code, _ := get(t, split.URL+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics on the API listener with metrics.listen set: %d", code)
	}
	var private string
	eventually(t, "the row gauges on the metrics listener", func() bool {
		code, private = get(t, split.MetricsURL)
		return strings.Contains(private, `agent_gateway_oauth_rows{table="clients"} 0`)
	})
	if code != http.StatusOK {
		t.Fatalf("the metrics listener: %d", code)
	}
	for _, want := range []string{`agent_gateway_oauth_rows{table="clients"} 0`, `agent_gateway_oauth_purged_rows_total{table="clients"} 0`} {
		if !strings.Contains(private, want) {
			t.Errorf("the metrics listener lacks %s", want)
		}
	}

	// The only listener's purge tick set its row gauges right after it
	// counted the run, long before now: they must still not be served.
	_, public = get(t, single.URL+"/metrics")
	for _, name := range storeSeries {
		if strings.Contains(public, name) {
			t.Errorf("/metrics on the API listener shows %s:\n%s", name, grepLines(public, name))
		}
	}
}
