package site

import (
	"net/http"
	"strings"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/web"
)

// Landing renders / from the live toolsets, so the page never lists a tool
// the gateway does not serve.
func Landing(version, publicURL string, forgejoC, documentsC *toolset.Toolset) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		landing(w, version, publicURL, forgejoC, documentsC)
	}
}

func landing(w http.ResponseWriter, version, publicURL string, forgejoC, documentsC *toolset.Toolset) {
	data := web.Landing{
		Version:   version,
		PublicURL: publicURL,
		Endpoints: []web.Endpoint{
			{Path: "/mcp/forgejo", What: "MCP Streamable HTTP endpoint: Forgejo tools"},
			{Path: "/.well-known/oauth-protected-resource/mcp/forgejo", What: "RFC 9728 metadata of the Forgejo endpoint (authorization server: the Forgejo origin)"},
			{Path: "/mcp/documents", What: "MCP Streamable HTTP endpoint: the project's allowlisted GitHub documents and instruction catalog (bearer required)"},
			{Path: "/.well-known/oauth-protected-resource/mcp/documents", What: "RFC 9728 metadata of the documents endpoint (authorization server: this gateway)"},
			{Path: "/.well-known/oauth-authorization-server", What: "RFC 8414 metadata of this gateway's OAuth authorization server (see docs/oauth.md)"},
			{Path: "/oauth/register, /oauth/authorize, /oauth/token, /oauth/revoke", What: "OAuth: dynamic client registration, authorization (login at the identity provider, consent), tokens, revocation"},
			{Path: "/metrics", What: "Prometheus exposition"},
			{Path: "/healthz", What: "liveness"},
			{Path: "/readyz", What: "readiness (checks the store; lists each upstream's state)"},
		},
		Toolsets: []web.ToolsetView{
			toolsetView("/mcp/forgejo", "Anonymous callers see the public tools; callers with a Forgejo bearer token see all.", forgejoC),
			toolsetView("/mcp/documents", "Needs a gateway-issued bearer token with each tool's scope ("+
				strings.Join(documentsC.ScopeNames(), ", ")+"); legacy project tokens are refused.", documentsC),
		},
	}
	web.Render(w, http.StatusOK, "landing.html", data)
}

func toolsetView(path, auth string, c *toolset.Toolset) web.ToolsetView {
	v := web.ToolsetView{Path: path, Auth: auth}
	for _, t := range c.Tools() {
		access := "authenticated"
		switch {
		case t.Policy.Anonymous:
			access = "anonymous"
		case len(t.Policy.Scopes) > 0:
			access = "scope " + strings.Join(t.Policy.ScopeNames(), ", ")
		}
		if t.Policy.Write {
			access += ", write"
		}
		v.Tools = append(v.Tools, web.ToolView{Name: t.Name, Title: t.Title, Description: t.Description, Access: access})
	}
	return v
}
