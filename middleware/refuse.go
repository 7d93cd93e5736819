package middleware

import (
	"encoding/json"
	"net/http"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Refuse answers a request that middleware will not pass on. A peeked
// JSON-RPC call gets a JSON-RPC error envelope with its own id (so SDK
// clients surface the code), anything else the plain {"error":{…}} body.
// The status comes from the code table in toolerr; the stable code is also
// recorded as the request's outcome for logs and metrics.
func Refuse(w http.ResponseWriter, r *http.Request, e *toolerr.Error) {
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
