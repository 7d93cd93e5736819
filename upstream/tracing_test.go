package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestMatchRoute(t *testing.T) {
	var routes []routeTemplate
	for _, r := range []string{
		"/api/v1/repos/search",
		"/api/v1/repos/{owner}/{repo}",
		"/api/v1/repos/{owner}/{repo}/pulls/{index}.diff",
		"/api/v1/repos/{owner}/{repo}/pulls/{index}",
		"/repos/{owner}/{repo}/contents/{path...}",
	} {
		routes = append(routes, parseRouteTemplate(r))
	}
	for _, tc := range []struct{ path, want string }{
		{"/api/v1/repos/search", "/api/v1/repos/search"},
		{"/api/v1/repos/alice/notes", "/api/v1/repos/{owner}/{repo}"},
		{"/api/v1/repos/alice/notes/pulls/7.diff", "/api/v1/repos/{owner}/{repo}/pulls/{index}.diff"},
		{"/api/v1/repos/alice/notes/pulls/7", "/api/v1/repos/{owner}/{repo}/pulls/{index}"},
		{"/api/v1/repos/alice/notes/pulls/.diff", "/api/v1/repos/{owner}/{repo}/pulls/{index}"}, // an empty parameter is not {index}.diff
		{"/repos/o/r/contents/docs/a%2Fb/c.md", "/repos/{owner}/{repo}/contents/{path...}"},
		{"/repos/o/r/contents", otherRoute},      // {path...} needs one segment at least
		{"/repos/o/r/contents/a//b", otherRoute}, // nor empty ones
		{"/api/v1/repos/alice", otherRoute},
		{"/api/v1/repos/alice/notes/extra/x", otherRoute},
		{"/", otherRoute},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := matchRoute(routes, tc.path); got != tc.want {
				t.Errorf("matchRoute(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

// TestTracingTransport proves the client span carries the template, not
// the path or query, and that traceparent reaches only a propagating
// origin, replacing whatever the request carried.
func TestTracingTransport(t *testing.T) {
	for _, propagate := range []bool{true, false} {
		t.Run(map[bool]string{true: "propagate", false: "no propagation"}[propagate], func(t *testing.T) {
			got := make(chan http.Header, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Clone()
				w.WriteHeader(http.StatusNotFound)
			}))
			defer srv.Close()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			origin, _ := url.Parse(srv.URL)
			c := New(Config{Name: "forgejo", Origin: origin, Tracing: &Tracing{
				Tracer: tp.Tracer("test"), Routes: []string{"/api/v1/repos/{owner}/{repo}"}, Propagate: propagate,
			}})
			defer c.CloseIdleConnections()
			ctx, parent := tp.Tracer("test").Start(context.Background(), "call")
			req, err := c.NewRequest(ctx, http.MethodGet, url.Values{"ref": {"secret-ref"}}, nil, "api", "v1", "repos", "alice", "private-notes")
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			parent.End()
			h := <-got
			sent := h.Get("traceparent")
			switch {
			case propagate && !strings.Contains(sent, parent.SpanContext().TraceID().String()):
				t.Errorf("traceparent %q does not carry the call's trace %s", sent, parent.SpanContext().TraceID())
			case !propagate && sent != "":
				t.Errorf("traceparent %q sent to a non-propagating origin", sent)
			}
			spans := rec.Ended()
			if len(spans) != 2 {
				t.Fatalf("%d spans, want the exchange and its parent", len(spans))
			}
			s := spans[0]
			if s.Name() != "GET /api/v1/repos/{owner}/{repo}" || s.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %q kind %v", s.Name(), s.SpanKind())
			}
			if s.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Error("the exchange span is not the call's child")
			}
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.String()
				if strings.Contains(kv.Value.String(), "private-notes") || strings.Contains(kv.Value.String(), "secret-ref") {
					t.Errorf("attribute %s = %q holds the caller's path or query", kv.Key, kv.Value.String())
				}
			}
			if attrs["http.response.status_code"] != "404" || attrs["url.template"] != "/api/v1/repos/{owner}/{repo}" || attrs["agent_gateway.upstream"] != "forgejo" {
				t.Errorf("attributes %v", attrs)
			}
		})
	}
}
