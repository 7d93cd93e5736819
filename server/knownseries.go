package server

import (
	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/middleware"
)

// pagingTools are the tools that serve pages (agent_gateway_pages_served_total
// and agent_gateway_page_bytes_total by tool, docs/metrics.md).
var pagingTools = []string{"get_pull_request_diff", "git_document_get"}

// oauthRefusalSeries are the endpoint/reason pairs the authorization server
// can refuse with (handlers/oauth limits.go and login.go).
var oauthRefusalSeries = [][2]string{
	{"register", "rate_limited"},
	{"authorize", "rate_limited"},
	{"authorize", "oversized_parameter"},
	{"authorize", "repeated_parameter"},
	{"authorize", "invalid_redirect_uri"},
	{"authorize", "unsupported_response_mode"},
}

// zeroKnownSeries creates every series whose labels are known at start, at
// zero, as Prometheus recommends: a counter that has not moved yet still
// shows on the dashboard (configs/grafana) as 0 instead of "no data", and
// rate() sees its first increment. Label sets that depend on traffic
// (routes, statuses, outcomes) appear with their first request.
func (g *Gateway) zeroKnownSeries() {
	for _, c := range []string{g.forgejoC.Name, g.documentsC.Name} {
		for _, budget := range []string{"read", "write"} {
			g.budgetRejections.WithLabelValues(c, budget)
		}
	}
	// The IP ceiling guards unverified Forgejo bearers only.
	g.budgetRejections.WithLabelValues(g.forgejoC.Name, "ip_ceiling")
	// Only the documents endpoint looks bearers up in the store, and only
	// it has a tool that dispatches.
	g.budgetRejections.WithLabelValues(g.documentsC.Name, "refused_bearers")
	g.budgetRejections.WithLabelValues(g.documentsC.Name, "dispatch")
	for _, event := range []string{"cache_hit", "minted", "mint_failed"} {
		g.domain.installTokens.WithLabelValues(event)
	}
	g.domain.evidenceEntities.WithLabelValues("verified")
	// Each configured origin's usual exchange (a GET answered 2xx).
	if g.forgejo != nil {
		g.metrics.zero("forgejo")
	}
	if g.cfg.GitHubAPIOrigin != nil {
		g.metrics.zero("github")
	}
	g.workflowPurge.zero()
	if g.oauthMetrics != nil {
		for _, s := range oauthRefusalSeries {
			g.oauthMetrics.refusals.WithLabelValues(s[0], s[1])
		}
		// At zero even with the documents off: a dashboard shows "none
		// fetched" rather than "no data".
		for _, result := range oauth.ClientMetadataLookupResults {
			g.oauthMetrics.cimd.WithLabelValues(result)
		}
		g.oauthMetrics.purge.zero()
	}
}

// zeroPages creates the per-tool page series at zero.
func zeroPages(m *middleware.Metrics) {
	for _, tool := range pagingTools {
		m.ZeroPages(tool)
	}
}
