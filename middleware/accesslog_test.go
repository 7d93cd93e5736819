package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAccessLog(t *testing.T) {
	const canary = "CANARY7f3a"
	passthrough := AuthenticatorFunc(func(_ context.Context, bearer string) (*Principal, error) {
		return NewPassthrough(bearer), nil
	})
	cases := []struct {
		name       string
		method     string
		target     string
		remote     string // "" for httptest's default
		body       string
		header     http.Header
		handler    http.Handler
		wantStatus int
		wantFields map[string]any
	}{
		{
			name:   "tool call with bearer, cookie and query",
			method: http.MethodPost, target: "/mcp/forgejo?access=" + canary + "&cursor=" + canary,
			body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"` + canary + `"}}}`,
			header: http.Header{
				"Authorization": {"Bearer tok-" + canary},
				"Cookie":        {"session=" + canary},
				"X-Request-Id":  {"req-1"},
				"User-Agent":    {canary},
			},
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				RecordFromContext(r.Context()).SetOutcome("ok")
				_, _ = w.Write([]byte("hello"))
			}),
			wantStatus: http.StatusOK,
			wantFields: map[string]any{
				"msg": "request", "level": "INFO", "request_id": "req-1", "method": "POST",
				"path": "/mcp/forgejo", "status": float64(200), "bytes": float64(5),
				"client_ip": "192.0.2.1", "rpc_method": "tools/call", "tool": "get_repository", "outcome": "ok",
			},
		},
		{
			// The bounds count an IPv6 caller by its /64; the log shows
			// the real caller.
			name:   "an IPv6 caller is logged by its full address",
			method: http.MethodGet, target: "/healthz", remote: "[2001:db8:1:2:aaaa::7]:443",
			handler:    http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
			wantStatus: http.StatusOK,
			wantFields: map[string]any{"client_ip": "2001:db8:1:2:aaaa::7"},
		},
		{
			name:   "refusal is logged with its code",
			method: http.MethodGet, target: "/mcp/forgejo?access_token=" + canary,
			handler:    mustNotRun(t),
			wantStatus: http.StatusUnauthorized,
			wantFields: map[string]any{"status": float64(401), "outcome": "unauthenticated", "caller": "", "tool": ""},
		},
		{
			name:   "handler that writes nothing is 200",
			method: http.MethodGet, target: "/healthz",
			handler:    http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
			wantStatus: http.StatusOK,
			wantFields: map[string]any{"status": float64(200), "bytes": float64(0), "outcome": ""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil))
			chain := RequestID(ClientIP(nil, 0)(AccessLog(log)(MCPPeek(Authenticate(passthrough, AuthOptions{})(tc.handler)))))
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.remote != "" {
				r.RemoteAddr = tc.remote
			}
			for k, v := range tc.header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			chain.ServeHTTP(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d", w.Code, tc.wantStatus)
			}
			out := buf.String()
			if strings.Contains(out, canary) {
				t.Fatalf("log line carries a secret: %s", out)
			}
			if strings.Count(out, "\n") != 1 {
				t.Fatalf("want exactly one log line, got %q", out)
			}
			var line map[string]any
			if err := json.Unmarshal([]byte(out), &line); err != nil {
				t.Fatalf("log line is not JSON: %v", err)
			}
			for k, want := range tc.wantFields {
				if got, present := line[k]; !present || got != want {
					t.Errorf("field %s = %#v, want %#v", k, got, want)
				}
			}
			for _, k := range []string{"time", "request_id", "method", "path", "status", "bytes", "duration", "client_ip", "caller", "rpc_method", "tool", "outcome"} {
				if _, present := line[k]; !present {
					t.Errorf("field %s missing", k)
				}
			}
			if h := w.Header().Get(RequestIDHeader); h == "" || line["request_id"] != h {
				t.Errorf("logged request_id %v, response header %q", line["request_id"], h)
			}
		})
	}
}

// The caller field is the hashed key of a passthrough credential, never the
// credential.
func TestAccessLogCallerIsHashed(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	auth := AuthenticatorFunc(func(_ context.Context, bearer string) (*Principal, error) { return NewPassthrough(bearer), nil })
	chain := RequestID(AccessLog(log)(Authenticate(auth, AuthOptions{})(ok)))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer secret-token-value")
	chain.ServeHTTP(httptest.NewRecorder(), r)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	want := NewPassthrough("secret-token-value").Key
	if line["caller"] != want || !strings.HasPrefix(want, "fj:") {
		t.Fatalf("caller = %v, want %s", line["caller"], want)
	}
	if strings.Contains(buf.String(), "secret-token-value") {
		t.Fatalf("token logged: %s", buf.String())
	}
}
