package middleware

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// newReq returns a request carrying a fresh Record, as RequestID would
// create it, so middleware under test can record into it.
func newReq(method, target string, body io.Reader) (*http.Request, *Record) {
	r := httptest.NewRequest(method, target, body)
	rec := &Record{requestID: "test-id"}
	return r.WithContext(WithRecord(r.Context(), rec)), rec
}

// setFrom makes rec say the request came from ip, as ClientIP leaves it
// with the default IPv6 prefix.
func setFrom(rec *Record, ip string) { rec.setClient(netip.MustParseAddr(ip), DefaultIPv6Prefix) }

// ok is a terminal handler that reads the body and answers 200 "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "ok")
})

// mustNotRun fails the test if the request reaches it.
func mustNotRun(t *testing.T) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("request reached the next handler")
	})
}

// errorBody decodes a plain refusal body {"error":{…}}.
func errorBody(t *testing.T, body string) map[string]any {
	t.Helper()
	var v struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", body, err)
	}
	if v.Error == nil {
		t.Fatalf("body %q has no error object", body)
	}
	return v.Error
}

// rpcError decodes a JSON-RPC error envelope and returns its id and error.
func rpcError(t *testing.T, body string) (json.RawMessage, map[string]any) {
	t.Helper()
	var v struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   map[string]any  `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", body, err)
	}
	if v.JSONRPC != "2.0" || v.Error == nil {
		t.Fatalf("body %q is not a JSON-RPC error", body)
	}
	return v.ID, v.Error
}
