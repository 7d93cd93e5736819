package forgejo

import (
	"mime"
	"net/http"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// The Core extensions a stock forge (Forgejo or Gitea without them) lacks,
// as forge_unsupported names them in its "extension" detail.
const (
	ExtensionDiffEvidence = "diff_evidence.v1"
	ExtensionWorkGrants   = "agent_work_grants"
)

// extensionNames are the human names of the extensions, for messages.
var extensionNames = map[string]string{
	ExtensionDiffEvidence: "diff evidence v1 (verified pull request diffs)",
	ExtensionWorkGrants:   "agent work grants",
}

// notJSON reports whether an answer declares exactly one well-formed media
// type that is not JSON (neither application/json nor a +json type). This
// is how a stock forge answers a Core extension's route: the evidence URL
// with "200 text/plain" and the plain diff, the grant routes with "404
// text/plain" and "404 page not found". Core answers every one of these
// routes with JSON, including its own 404s. A missing, repeated or
// unparsable Content-Type is not this shape: it stays the framing fault it
// is.
func notJSON(h http.Header) bool {
	v := h.Values("Content-Type")
	if len(v) != 1 {
		return false
	}
	mt, _, err := mime.ParseMediaType(v[0])
	if err != nil {
		return false
	}
	return mt != "application/json" && !strings.HasSuffix(mt, "+json")
}

// forgeUnsupported is the error of a route a stock forge answered: the
// forge lacks the extension, so the call can never succeed there. It says
// so instead of reporting a framing fault (which reads like a broken proxy)
// or not_found (which reads like a missing grant).
func forgeUnsupported(extension string, status int) *toolerr.Error {
	return toolerr.New(toolerr.ForgeUnsupported,
		"the forge does not offer the %s extension of Forgejo Core: it answered this route with a non-JSON "+
			"document, as a stock Forgejo or Gitea does, where Core answers JSON", extensionNames[extension]).
		With("extension", extension).With("native_status", status)
}
