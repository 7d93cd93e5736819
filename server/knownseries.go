package server

import (
	"slices"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
)

// zeroKnownSeries creates every series whose labels are known at start, at
// zero, as Prometheus recommends: a counter that has not moved yet still
// shows on the dashboard (configs/grafana) as 0 instead of "no data", and
// rate() sees its first increment. Label sets that depend on traffic
// (routes, statuses, outcomes) appear with their first request.
func (g *Gateway) zeroKnownSeries() {
	// Each endpoint's budget series are created with its chain
	// (zeroBudgets), which knows its budgets.
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
	for _, p := range g.purges {
		p.counters.zero()
	}
	if g.oauthMetrics != nil {
		for _, r := range oauth.Refusals {
			g.oauthMetrics.refusals.WithLabelValues(r.Endpoint, r.Reason)
		}
		// At zero even with the documents off: a dashboard shows "none
		// fetched" rather than "no data".
		for _, result := range oauth.ClientMetadataLookupResults {
			g.oauthMetrics.cimd.WithLabelValues(result)
		}
	}
}

// zeroPages creates the page series of every tool that serves
// pages (toolset.Tool.Pages) at zero.
func zeroPages(m *middleware.Metrics, cs ...*toolset.Toolset) {
	for _, tool := range pagingTools(cs...) {
		m.ZeroPages(tool)
	}
}

// pagingTools are the tools of the toolsets that serve pages
// (agent_gateway_pages_served_total and agent_gateway_page_bytes_total by
// tool, docs/metrics.md).
func pagingTools(cs ...*toolset.Toolset) []string {
	var out []string
	for _, c := range cs {
		for _, t := range c.Tools() {
			if t.Pages {
				out = append(out, t.Name)
			}
		}
	}
	return out
}

// endpointBudgets are the budgets that can refuse a request at the
// endpoint serving c, derived from what the endpoint has: read and write
// everywhere; dispatch where a tool dispatches and the bound is set;
// ip_ceiling where a tool forwards the caller's own Forgejo credential,
// the only calls an unverified bearer is spent on; refused_bearers where
// bearers are looked up before they can be refused (auth.Refused).
func endpointBudgets(c *toolset.Toolset, auth middleware.AuthOptions, o middleware.BudgetOptions) []string {
	out := []string{middleware.BudgetRead, middleware.BudgetWrite}
	tools := c.Tools()
	if o.DispatchPerWindow > 0 && slices.ContainsFunc(tools, func(t toolset.Tool) bool { return t.Policy.Dispatch }) {
		out = append(out, middleware.BudgetDispatch)
	}
	if slices.ContainsFunc(tools, func(t toolset.Tool) bool { return t.Needs == toolset.ForgejoCredential }) {
		out = append(out, middleware.BudgetIPCeiling)
	}
	if auth.Refused != nil {
		out = append(out, middleware.BudgetRefusedBearers)
	}
	return out
}

// zeroBudgets creates the budget rejection series of an endpoint at zero.
func (g *Gateway) zeroBudgets(c *toolset.Toolset, budgets []string) {
	for _, b := range budgets {
		g.budgetRejections.WithLabelValues(c.Name, b)
	}
}
