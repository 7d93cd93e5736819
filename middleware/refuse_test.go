package middleware

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

func TestRefuse(t *testing.T) {
	cases := []struct {
		name     string
		call     Call
		err      *toolerr.Error
		status   int
		rpcCode  float64
		envelope bool
	}{
		{"no call: plain body", Call{}, toolerr.New(toolerr.BodyTooLarge, "too big"), 413, 0, false},
		{"notification: plain body", Call{Method: "notifications/x"}, toolerr.New(toolerr.RateLimited, "slow down"), 429, 0, false},
		{"numeric id", Call{Method: "tools/call", ID: json.RawMessage(`7`)}, toolerr.New(toolerr.InsufficientScope, "no"), 403, -32003, true},
		{"string id", Call{Method: "ping", ID: json.RawMessage(`"abc"`)}, toolerr.New(toolerr.Unauthenticated, "who"), 401, -32001, true},
		{"invalid arguments", Call{Method: "ping", ID: json.RawMessage(`1`)}, toolerr.New(toolerr.InvalidArguments, "bad"), 400, -32602, true},
		{"internal", Call{Method: "ping", ID: json.RawMessage(`1`)}, toolerr.New(toolerr.Internal, "oops"), 500, -32603, true},
		{"details kept", Call{ID: json.RawMessage(`1`)}, toolerr.New(toolerr.RateLimited, "spent").With("budget", "write"), 429, -32029, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, rec := newReq(http.MethodPost, "/", nil)
			rec.SetCall(tc.call)
			w := httptest.NewRecorder()
			Refuse(w, r, tc.err)
			if w.Code != tc.status {
				t.Fatalf("status = %d, want %d", w.Code, tc.status)
			}
			if w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("headers %v", w.Header())
			}
			if rec.Outcome() != string(tc.err.Code) {
				t.Errorf("outcome = %q", rec.Outcome())
			}
			var data map[string]any
			if tc.envelope {
				id, e := rpcError(t, w.Body.String())
				if string(id) != string(tc.call.ID) {
					t.Errorf("id = %s, want %s", id, tc.call.ID)
				}
				if e["code"] != tc.rpcCode || e["message"] != tc.err.Message {
					t.Errorf("error = %v", e)
				}
				data, _ = e["data"].(map[string]any)
			} else {
				data = errorBody(t, w.Body.String())
			}
			if data["code"] != string(tc.err.Code) || data["message"] != tc.err.Message {
				t.Errorf("error object = %v", data)
			}
			for k, v := range tc.err.Details {
				if data[k] != v {
					t.Errorf("detail %s = %v, want %v", k, data[k], v)
				}
			}
		})
	}
}

// TestRefuseRetryAfter: a Retry-After set before the refusal is repeated in
// the error as retry_after_seconds, in both envelopes; without one, or with
// one that is not a number of seconds, the error has no such member.
func TestRefuseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		call         Call
		want         any
	}{
		{"plain body", "60", Call{}, float64(60)},
		{"JSON-RPC envelope", "1", Call{Method: "tools/call", ID: json.RawMessage(`3`)}, float64(1)},
		{"no header", "", Call{}, nil},
		{"an HTTP date is not repeated", "Wed, 21 Oct 2026 07:28:00 GMT", Call{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, rec := newReq(http.MethodPost, "/", nil)
			rec.SetCall(tc.call)
			w := httptest.NewRecorder()
			if tc.header != "" {
				w.Header().Set("Retry-After", tc.header)
			}
			Refuse(w, r, toolerr.New(toolerr.RateLimited, "spent"))
			var data map[string]any
			if tc.call.ID != nil {
				_, e := rpcError(t, w.Body.String())
				data, _ = e["data"].(map[string]any)
			} else {
				data = errorBody(t, w.Body.String())
			}
			if got, ok := data["retry_after_seconds"]; got != tc.want || ok != (tc.want != nil) {
				t.Fatalf("retry_after_seconds = %v (present %v), want %v: %s", got, ok, tc.want, w.Body.String())
			}
		})
	}
}
