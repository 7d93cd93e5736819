package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"

	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// MaxJSONDepth bounds the nesting of any MCP request body; real MCP messages
// nest a handful of levels.
const MaxJSONDepth = 32

// MCPPeek reads the (already size-limited) POST body once, checks that it
// is one strict JSON-RPC message, records its method, tool name and id for
// the gate, budgets, logs and page fitting, and restores the body for the
// MCP handler.
//
// Strictness here is a security property, not pedantry: the SDK decodes the
// envelope with a different JSON library, so a repeated "method" or "name"
// member, or trailing data after the message, could make this gate and the
// SDK see different calls. Bodies that are not one JSON object, repeated
// members at any depth, nesting over MaxJSONDepth and batches (which the
// supported protocol revisions do not allow) are refused with 400.
func MCPPeek(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			Refuse(w, r, toolerr.New(toolerr.BodyTooLarge, "request body over %d bytes", mbe.Limit))
			return
		case bodyBudgetRefusal(err) != nil:
			w.Header().Set("Retry-After", "1")
			closeAfter(w, r)
			Refuse(w, r, bodyBudgetRefusal(err))
			return
		case err != nil:
			Refuse(w, r, toolerr.New(toolerr.InvalidArguments, "request body could not be read"))
			return
		}
		call, perr := peekCall(body)
		if perr != "" {
			Refuse(w, r, toolerr.New(toolerr.InvalidArguments, "%s", perr))
			return
		}
		if reason := checkID(call.ID); reason != "" {
			// The id cannot be echoed as sent, so the answer carries null
			// (JSON-RPC 2.0 §5, an id that cannot be determined).
			call.ID = json.RawMessage("null")
			RecordFromContext(r.Context()).SetCall(call)
			Refuse(w, r, toolerr.New(toolerr.InvalidRequest, "%s", reason))
			return
		}
		RecordFromContext(r.Context()).SetCall(call)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// readBody reads the whole body. With a declared length the buffer grows
// as bytes arrive, doubling but never past the declared length: a request
// that declares 1 MiB and sends a few bytes holds a few bytes, not a 1 MiB
// buffer (nothing is reserved beyond what has arrived), and the
// copy is never twice the declared length as io.ReadAll's could be.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > MaxBodyBytes {
		return io.ReadAll(r.Body)
	}
	want := int(r.ContentLength)
	buf := make([]byte, 0, min(want, bodyStep)+1)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(1, min(cap(buf), want+1-len(buf))))
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// peekCall parses a JSON-RPC message strictly and returns its call, or a
// reason to refuse it.
//
// Anything that is not exactly one JSON object is refused here rather than
// left to the SDK: the gate must judge every message the SDK could run, and
// the SDK's decoder reads the first value of a body and ignores what
// follows, so `{…tools/call…} x` — invalid to encoding/json — would reach it
// as a call the gate never saw. The SDK refuses other non-objects with 400
// too, so honest clients see no difference.
func peekCall(body []byte) (Call, string) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Call{}, "JSON-RPC batches are not supported"
	}
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return Call{}, "the request body is not one JSON-RPC message (a single JSON object)"
	}
	if reason := checkStrict(trimmed); reason != "" {
		return Call{}, reason
	}
	// Members are looked up exactly, as the SDK (which matches struct
	// fields case-sensitively) looks them up. Decoding into a struct here
	// would let encoding/json match "paramſ" (long s) or "PARAMS" to params,
	// and the gate could then judge a different call than the SDK runs.
	// checkStrict refused repeats, so each name is seen at most once.
	var call Call
	var params json.RawMessage
	strictjson.Members(trimmed, func(name string, value json.RawMessage) bool {
		switch name {
		case "method":
			_ = json.Unmarshal(value, &call.Method)
		case "id":
			if string(value) != "null" {
				call.ID = slices.Clone(value)
			}
		case "params":
			params = value
		}
		return true
	})
	if call.Method == "tools/call" {
		var name json.RawMessage
		if len(params) > 0 && params[0] == '{' {
			strictjson.Members(params, func(member string, value json.RawMessage) bool {
				if member == "name" {
					name = value
				}
				return member != "name"
			})
		}
		// A JSON null would unmarshal into a string without error.
		if len(name) == 0 || name[0] != '"' || json.Unmarshal(name, &call.Tool) != nil || len(call.Tool) > 128 {
			return Call{}, "tools/call needs a string tool name"
		}
	}
	return call, ""
}
