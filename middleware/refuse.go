package middleware

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Refuse answers a request that middleware will not pass on. A peeked
// JSON-RPC call gets a JSON-RPC error envelope with its own id (so SDK
// clients surface the code), anything else the plain {"error":{…}} body.
// A Retry-After already set is repeated in the error as
// retry_after_seconds. The status comes from the code table in toolerr;
// the stable code is also recorded as the request's outcome for logs and
// metrics.
func Refuse(w http.ResponseWriter, r *http.Request, e *toolerr.Error) {
	// A refusal that says when to retry says it in the body too, for
	// clients (MCP SDKs) that surface the JSON-RPC error but not the HTTP
	// headers; one place, so no budget or bound can forget it.
	if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err == nil {
		e = e.With("retry_after_seconds", s)
	}
	rec := RecordFromContext(r.Context())
	rec.SetOutcome(string(e.Code))
	body := e.Body()
	if call := rec.Call(); call.ID != nil {
		body = e.RPCError(call.ID)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.Code.HTTPStatus())
	_ = json.NewEncoder(w).Encode(body)
}
