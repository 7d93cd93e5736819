package middleware

import (
	"net/http"
	"slices"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Challenge is one endpoint's RFC 6750 bearer challenge: the only place a
// WWW-Authenticate header is written, so a 401 from authentication and a
// 401 or 403 from the scope gate name the same metadata and the same
// scopes.
type Challenge struct {
	// ResourceMetadataURL is the endpoint's RFC 9728 metadata URL
	// (RFC 9728 §5.1), so MCP clients can discover how to authenticate.
	ResourceMetadataURL string
	// Scopes are every scope the endpoint's tools check, in the order to
	// name them. A 401 names them all (MCP authorization, "Scope Selection
	// Strategy": a client asks for the 401's scope), so one authorization
	// covers every tool; a 403 names the ones the caller holds among them
	// and those the call needs. Empty names none: /mcp/forgejo's scopes
	// are Forgejo's to say.
	Scopes []string
}

// Unauthorized answers 401 with the challenge and, when given, an RFC 6750
// error code (invalid_token, invalid_request).
func (c Challenge) Unauthorized(w http.ResponseWriter, r *http.Request, errCode, message string) {
	w.Header().Set("WWW-Authenticate", c.header(errCode, c.Scopes))
	Refuse(w, r, toolerr.New(toolerr.Unauthenticated, "%s", message))
}

// InsufficientScope answers 403 error="insufficient_scope" for a call of
// tool, which needs the scopes needed, by who. The challenge names the
// whole set to ask for: the endpoint's scopes who already holds, then the
// needed ones it lacks (MCP authorization, "Scope Challenge Handling", the
// recommended approach), so a client that re-authorizes with exactly that
// set keeps what it had. The body's required_scopes are the tool's own.
func (c Challenge) InsufficientScope(w http.ResponseWriter, r *http.Request, who *Principal, tool string, needed []string) {
	var ask, missing []string
	for _, s := range c.Scopes {
		if who.HasScope(s) {
			ask = append(ask, s)
		}
	}
	for _, s := range needed {
		if !who.HasScope(s) {
			missing = append(missing, s)
		}
		if !slices.Contains(ask, s) {
			ask = append(ask, s)
		}
	}
	w.Header().Set("WWW-Authenticate", c.header("insufficient_scope", ask))
	Refuse(w, r, toolerr.New(toolerr.InsufficientScope, "tool %s needs scope %s", quote(tool), strings.Join(missing, " ")).
		With("required_scopes", slices.Clone(needed)))
}

// header is the WWW-Authenticate value: Bearer, then the error code, the
// scopes and the metadata URL, each only when there is one.
func (c Challenge) header(errCode string, scopes []string) string {
	var params []string
	if errCode != "" {
		params = append(params, `error="`+errCode+`"`)
	}
	if len(scopes) > 0 {
		params = append(params, `scope="`+strings.Join(scopes, " ")+`"`)
	}
	if c.ResourceMetadataURL != "" {
		params = append(params, `resource_metadata="`+c.ResourceMetadataURL+`"`)
	}
	if len(params) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(params, ", ")
}
