package site

import (
	"net/http"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// UnknownEndpoint answers /mcp and every other path under it that is not
// one of the two MCP endpoints. Clients written for single-endpoint
// servers guess `/mcp` (and some tools rewrite a URL to it); an alias would
// have to pick one of two toolsets, so the gateway answers 404
// unknown_endpoint instead, naming both endpoints as full URLs the client
// can be given. The message repeats nothing of the request.
func UnknownEndpoint(publicURL string) http.HandlerFunc {
	forgejo, documents := publicURL+"/mcp/forgejo", publicURL+"/mcp/documents"
	e := toolerr.New(toolerr.UnknownEndpoint,
		"no MCP endpoint here: this gateway serves %s (Forgejo tools) and %s (project documents); give your MCP client one of these whole URLs",
		forgejo, documents).
		With("endpoints", map[string]string{"forgejo": forgejo, "documents": documents})
	return func(w http.ResponseWriter, r *http.Request) {
		middleware.Refuse(w, r, e)
	}
}
