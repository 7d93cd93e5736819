package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// dashboardFile is the Grafana dashboard docs/metrics.md links.
const dashboardFile = "../../configs/grafana/agent-gateway.json"

// grafanaPanel is the part of a Grafana panel the test reads.
type grafanaPanel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's panels
}

// dashboardExprs parses the dashboard and returns every PromQL expression
// of its panels and template variables.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string         `json:"uid"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboardFile, err)
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid (provisioning needs a stable one)")
	}
	var exprs []string
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q has an empty query", p.Title)
				}
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// metricName finds the series names a PromQL expression reads.
var metricName = regexp.MustCompile(`\b(?:agent_gateway|go|process)_[a-z0-9_]+\b`)

// TestGrafanaDashboard parses configs/grafana/agent-gateway.json and proves
// that every series its queries read is in a freshly started gateway's
// /metrics after a few calls: series whose labels are known at start exist
// at zero (no installation token was minted and no budget spent here, yet
// both panels have data), and the rest appear with the first calls.
func TestGrafanaDashboard(t *testing.T) {
	exprs := dashboardExprs(t)
	if len(exprs) < 15 {
		t.Fatalf("the dashboard has %d queries; expected the documented panels", len(exprs))
	}
	names := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			names[n] = true
		}
	}
	for _, want := range []string{ // the panels the dashboard promises (docs/metrics.md)
		"agent_gateway_http_requests_total",
		"agent_gateway_http_request_duration_seconds_bucket",
		"agent_gateway_upstream_requests_total",
		"agent_gateway_evidence_verified_bytes_total",
		"agent_gateway_budget_rejections_total",
		"agent_gateway_load_refusals_total",
		"agent_gateway_github_installation_tokens_total",
		"agent_gateway_audit_calls_total",
	} {
		if !names[want] {
			t.Errorf("no dashboard query reads %s", want)
		}
	}
	promtoolCheckExprs(t, exprs)

	emu, d := startDemoEmulator(t)
	// The dashboard reads the store's row counts too, which only the
	// metrics listener serves, and the audit record's series, which exist
	// with audit.mode on.
	docs := newDocStack(t, storetest.SQLiteURL(t), stackOptions{env: map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN": emu.URL(),
		"AGENT_GATEWAY_METRICS_LISTEN": gatewaytest.FreeAddr(t),
		"AGENT_GATEWAY_AUDIT_MODE":     "best_effort",
	}})
	gw := docs.gw
	fj := gw.Connect(t, "/mcp/forgejo", d.ReaderToken)
	callTool(t, fj, "get_repository", map[string]any{"owner": d.Owner, "repo": d.PublicRepo})
	if page, out := callDiff(t, fj, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull}); page == nil {
		t.Fatalf("diff page: %v", out)
	}
	code, exposition := get(t, gw.MetricsURL)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	present := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		present[name] = true
	}
	sorted := slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range sorted {
		if !present[n] {
			t.Errorf("the dashboard reads %s, which a fresh gateway's /metrics lacks", n)
		}
	}
	// The zero series: nothing was minted or refused, yet the series exist.
	for _, want := range []string{
		`agent_gateway_github_installation_tokens_total{event="minted"} 0`,
		`agent_gateway_budget_rejections_total{budget="read",toolset="agent-gateway-documents"} 0`,
		`agent_gateway_budget_rejections_total{budget="refused_bearers",toolset="agent-gateway-documents"} 0`,
		`agent_gateway_oauth_refusals_total{endpoint="register",reason="rate_limited"} 0`,
		`agent_gateway_pages_served_total{tool="git_document_get"} 0`,
		`agent_gateway_audit_records_total{result="queue_full"} 0`,
		`agent_gateway_audit_calls_total{outcome="ok",principal_kind="forgejo_bearer"} 2`,
	} {
		if !strings.Contains(exposition, want) {
			t.Errorf("/metrics lacks the zero series %s", want)
		}
	}
}

// promtoolCheckExprs proves each query is valid PromQL: the expressions
// become recording rules (Grafana's variables replaced by what they
// expand to) and `promtool check rules` parses them.
func promtoolCheckExprs(t *testing.T, exprs []string) {
	t.Helper()
	path, ok := promtool(t)
	if !ok {
		t.Log("promtool not installed: PromQL syntax unchecked")
		return
	}
	grafanaVars := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, e := range exprs {
		if strings.HasPrefix(e, "label_values(") {
			continue // a Grafana template function, not PromQL
		}
		q, _ := json.Marshal(grafanaVars.Replace(e))
		rules.WriteString("  - record: dashboard:query_" + strconv.Itoa(i) + "\n")
		rules.WriteString("    expr: " + string(q) + "\n")
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("a dashboard query is not valid PromQL: %v\n%s", err, out)
	}
}
