package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestTrace(t *testing.T) {
	const (
		parentTrace = "0af7651916cd43dd8448eb211c80319c"
		traceparent = "00-" + parentTrace + "-b7ad6b7169203331-01"
	)
	cases := []struct {
		name        string
		remote      string
		body        string
		outcome     string
		wantName    string
		wantParent  bool
		wantTool    string
		wantMethod  string
		wantOutcome string
	}{
		{"trusted proxy's traceparent continues", "10.0.0.5:1234", call("get_repository"), "ok",
			"tools/call get_repository", true, "get_repository", "tools/call", "ok"},
		{"untrusted caller's traceparent is ignored", "192.0.2.7:1234", call("get_repository"), "not_found",
			"tools/call get_repository", false, "get_repository", "tools/call", "not_found"},
		{"a tool outside the toolset is unknown", "192.0.2.7:1234", call("/etc/passwd"), "unknown_tool",
			"tools/call unknown", false, "unknown", "tools/call", "unknown_tool"},
		{"a method outside MCP is other", "192.0.2.7:1234", `{"jsonrpc":"2.0","id":1,"method":"secret/ghp_abc"}`, "",
			"other", false, "", "other", "none"},
		{"a refusal in the chain is a span too", "192.0.2.7:1234", `garbage`, "",
			"POST /mcp/forgejo", false, "", "", "invalid_arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			r := chi.NewRouter()
			r.Use(RequestID)
			var inner trace.SpanContext
			h := MCPPeek(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner = trace.SpanContextFromContext(r.Context())
				if tc.outcome != "" {
					RecordFromContext(r.Context()).SetOutcome(tc.outcome)
				}
			}))
			r.Handle("/mcp/forgejo", Trace(TraceOptions{
				Tracer:         tp.Tracer("test"),
				TrustedParents: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
				Known:          func(tool string) bool { return tool == "get_repository" },
			})(h))
			req := httptest.NewRequest(http.MethodPost, "/mcp/forgejo?cursor=c-secret", strings.NewReader(tc.body))
			req.RemoteAddr = tc.remote
			req.Header.Set("traceparent", traceparent)
			req.Header.Set("Authorization", "Bearer tok-secret")
			r.ServeHTTP(httptest.NewRecorder(), req)
			if tc.wantMethod != "" && !inner.IsValid() {
				t.Fatal("the handler did not run")
			}

			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Name() != tc.wantName || s.SpanKind() != trace.SpanKindServer {
				t.Errorf("span %q kind %v, want %q server", s.Name(), s.SpanKind(), tc.wantName)
			}
			if got := s.SpanContext().TraceID().String() == parentTrace; got != tc.wantParent {
				t.Errorf("continues the caller's trace: %v, want %v", got, tc.wantParent)
			}
			if inner.IsValid() && inner.SpanID() != s.SpanContext().SpanID() {
				t.Error("the handler does not run inside the call's span")
			}
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				v := kv.Value.String()
				attrs[string(kv.Key)] = v
				for _, secret := range []string{"tok-secret", "c-secret", "passwd", "ghp_abc"} {
					if strings.Contains(v, secret) {
						t.Errorf("attribute %s = %q carries the caller's %q", kv.Key, v, secret)
					}
				}
			}
			if attrs["gen_ai.tool.name"] != tc.wantTool || attrs["mcp.method.name"] != tc.wantMethod || attrs["agent_gateway.outcome"] != tc.wantOutcome {
				t.Errorf("attributes %v", attrs)
			}
			if attrs["http.route"] != "/mcp/forgejo" {
				t.Errorf("http.route %q", attrs["http.route"])
			}
		})
	}
}

func call(tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"cursor":"c-secret"}}}`, tool)
}
