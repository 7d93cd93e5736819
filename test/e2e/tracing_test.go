package e2e

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// otlpSpan is one received span, flattened.
type otlpSpan struct {
	traceID, spanID, parentID string
	name                      string
	kind                      tracepb.Span_SpanKind
	attrs                     map[string]string
}

// otlpReceiver is an in-process OTLP/HTTP trace collector: POST
// /v1/traces with a protobuf ExportTraceServiceRequest.
type otlpReceiver struct {
	*httptest.Server
	mu            sync.Mutex
	spans         []otlpSpan
	resourceAttrs []string
	paths         []string
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		var req collectortrace.ExportTraceServiceRequest
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		rcv.paths = append(rcv.paths, r.URL.Path)
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				rcv.resourceAttrs = append(rcv.resourceAttrs, kv.Key+"="+anyValue(kv.Value))
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := otlpSpan{traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId),
						parentID: hex.EncodeToString(s.ParentSpanId), name: s.Name, kind: s.Kind, attrs: map[string]string{}}
					for _, kv := range s.Attributes {
						sp.attrs[kv.Key] = anyValue(kv.Value)
					}
					rcv.spans = append(rcv.spans, sp)
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	default:
		return v.String()
	}
}

// snapshot returns the spans received so far.
func (r *otlpReceiver) snapshot() []otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]otlpSpan(nil), r.spans...)
}

// waitFor polls until the received spans satisfy done (spans are batched
// every 100 ms; see OTEL_BSP_SCHEDULE_DELAY below).
func (r *otlpReceiver) waitFor(t *testing.T, done func([]otlpSpan) bool) []otlpSpan {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		spans := r.snapshot()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			for _, s := range spans {
				t.Logf("span %s %s parent %s %q %v", s.traceID, s.spanID, s.parentID, s.name, s.attrs)
			}
			t.Fatal("the expected spans did not arrive")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// traceparentTransport sends a fixed W3C traceparent on every request, as
// a tracing ingress proxy would.
type traceparentTransport struct {
	traceparent, bearer string
}

func (tr traceparentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if tr.traceparent != "" {
		r.Header.Set("traceparent", tr.traceparent)
	}
	if tr.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+tr.bearer)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectWithTraceparent(t *testing.T, endpoint, bearer, traceparent string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "tracing-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: traceparentTransport{traceparent: traceparent, bearer: bearer}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// findSpan returns the first span matching name, and whether one did.
func findSpan(spans []otlpSpan, match func(otlpSpan) bool) (otlpSpan, bool) {
	for _, s := range spans {
		if match(s) {
			return s, true
		}
	}
	return otlpSpan{}, false
}

func childrenOf(spans []otlpSpan, parent otlpSpan) []otlpSpan {
	var out []otlpSpan
	for _, s := range spans {
		if s.traceID == parent.traceID && s.parentID == parent.spanID {
			out = append(out, s)
		}
	}
	return out
}

// TestTracingSpanTree runs the real binary with tracing on against an
// in-process OTLP/HTTP receiver and asserts the span trees of two diff
// pages (continuing a trusted proxy's traceparent, propagated to Forgejo)
// and of a two-fragment document read (a new trace; store and GitHub
// spans, no traceparent sent to GitHub), and that no span or resource
// attribute holds a token, a cursor or a caller's path.
func TestTracingSpanTree(t *testing.T) {
	rcv := startOTLPReceiver(t)
	emu, d := startDemoEmulator(t)
	docs := newDocStack(t, storetest.SQLiteURL(t), stackOptions{env: map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN":        emu.URL(),
		"AGENT_GATEWAY_TRACING_OTLP_ENDPOINT": rcv.URL,
		"AGENT_GATEWAY_TRUSTED_PROXIES":       "127.0.0.1",
		"OTEL_BSP_SCHEDULE_DELAY":             "100",
	}})
	gw := docs.gw

	const ingressTrace, ingressSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	fj := connectWithTraceparent(t, gw.URL+"/mcp/forgejo", d.ReaderToken, "00-"+ingressTrace+"-"+ingressSpan+"-01")
	args := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull}
	page, out := callDiff(t, fj, args)
	if page == nil {
		t.Fatalf("diff page: %v", out)
	}
	var diffCursor string // the demo's pull request may fit in one page
	calls := 3            // diff pages and document reads
	if page.NextCursor != nil {
		calls++
		diffCursor = *page.NextCursor
		args["cursor"] = diffCursor
		if page, out = callDiff(t, fj, args); page == nil {
			t.Fatalf("second diff page: %v", out)
		}
	}

	ds := connectWithTraceparent(t, gw.URL+"/mcp/documents", docs.tokenA, "")
	first, isErr := callTool(t, ds, "git_document_get", map[string]any{"source_id": docs.sources[docs.docs.Runtime], "max_bytes": 256})
	docCursor, ok := first["next_cursor"].(string)
	if isErr || !ok {
		t.Fatalf("document read: %v (want a next_cursor)", first)
	}
	if _, isErr := callTool(t, ds, "git_document_get", map[string]any{"source_id": docs.sources[docs.docs.Runtime], "cursor": docCursor}); isErr {
		t.Fatal("document read with the cursor failed")
	}

	isCall := func(tool string) func(otlpSpan) bool {
		return func(s otlpSpan) bool { return s.name == "tools/call "+tool }
	}
	// Children end before their parent, so they are in the same batch or
	// an earlier one: waiting for every call's span is waiting for all.
	spans := rcv.waitFor(t, func(spans []otlpSpan) bool {
		n := 0
		for _, s := range spans {
			if isCall("get_pull_request_diff")(s) || isCall("git_document_get")(s) {
				n++
			}
		}
		return n >= calls
	})

	diffCall, ok := findSpan(spans, isCall("get_pull_request_diff"))
	if !ok {
		t.Fatal("no span for the diff call")
	}
	if diffCall.traceID != ingressTrace || diffCall.parentID != ingressSpan {
		t.Errorf("the diff call is in trace %s under %s; want the trusted proxy's %s under %s",
			diffCall.traceID, diffCall.parentID, ingressTrace, ingressSpan)
	}
	if diffCall.kind != tracepb.Span_SPAN_KIND_SERVER || diffCall.attrs["gen_ai.tool.name"] != "get_pull_request_diff" ||
		diffCall.attrs["agent_gateway.outcome"] != "ok" || diffCall.attrs["mcp.method.name"] != "tools/call" {
		t.Errorf("diff call span: kind %v attributes %v", diffCall.kind, diffCall.attrs)
	}
	evidence, ok := findSpan(childrenOf(spans, diffCall), func(s otlpSpan) bool {
		return s.attrs["url.template"] == "/api/v1/repos/{owner}/{repo}/pulls/{index}.diff"
	})
	if !ok {
		t.Fatalf("the diff call has no evidence GET child: %v", childrenOf(spans, diffCall))
	}
	if evidence.name != "GET /api/v1/repos/{owner}/{repo}/pulls/{index}.diff" || evidence.kind != tracepb.Span_SPAN_KIND_CLIENT ||
		evidence.attrs["http.response.status_code"] != "200" || evidence.attrs["agent_gateway.upstream"] != "forgejo" ||
		evidence.attrs["server.address"] != "127.0.0.1" {
		t.Errorf("evidence span %q: kind %v attributes %v", evidence.name, evidence.kind, evidence.attrs)
	}
	// Forgejo received the call's trace context, with the exchange span as parent.
	propagated := false
	for _, r := range emu.Requests() {
		if strings.HasSuffix(r.Path, ".diff") {
			tp := r.Header.Get("traceparent")
			if !strings.HasPrefix(tp, "00-"+ingressTrace+"-") {
				t.Errorf("Forgejo got traceparent %q, want trace %s", tp, ingressTrace)
			}
			propagated = true
		}
	}
	if !propagated {
		t.Error("Forgejo saw no diff request")
	}

	docCall, ok := findSpan(spans, isCall("git_document_get"))
	if !ok {
		t.Fatal("no span for the document read")
	}
	if docCall.traceID == ingressTrace || docCall.parentID != "" || docCall.attrs["agent_gateway.outcome"] != "ok" {
		t.Errorf("document call span: trace %s parent %q attributes %v; want a new root", docCall.traceID, docCall.parentID, docCall.attrs)
	}
	kids := childrenOf(spans, docCall)
	for _, want := range []string{"store.LookupAccessToken", "store.GetDocumentSource", "GET /repos/{owner}/{repo}/contents/{path...}"} {
		if _, ok := findSpan(kids, func(s otlpSpan) bool { return s.name == want }); !ok {
			t.Errorf("the document read has no %s child", want)
		}
	}
	if _, ok := findSpan(kids, func(s otlpSpan) bool {
		return strings.HasPrefix(s.name, "store.") && s.attrs["db.system"] == "sqlite" && s.attrs["db.operation.name"] != ""
	}); !ok {
		t.Errorf("the document read has no store span: %v", kids)
	}
	contents, ok := findSpan(kids, func(s otlpSpan) bool {
		return s.attrs["url.template"] == "/repos/{owner}/{repo}/contents/{path...}"
	})
	if !ok || contents.attrs["agent_gateway.upstream"] != "github" || contents.attrs["http.response.status_code"] != "200" {
		t.Errorf("the document read has no GitHub contents span: %v", kids)
	}
	for _, r := range docs.emu.Requests() {
		if r.Header.Get("traceparent") != "" || r.Header.Get("tracestate") != "" {
			t.Errorf("GitHub got trace context on %s %s", r.Method, r.Route)
		}
	}

	// No attribute anywhere holds a credential, a cursor, or a caller's
	// owner, repository or path.
	secrets := []string{d.ReaderToken, docs.tokenA, diffCursor, docCursor, d.Owner, d.PublicRepo,
		docs.docs.Runtime, docs.sources[docs.docs.Runtime], docs.projectA, docsOwner, docsRepo}
	check := func(where, v string) {
		for _, s := range secrets {
			// A short name is looked for whole or as a path segment
			// ("gateway" is also in "agent-gateway").
			if s != "" && (v == s || strings.Contains(v, "/"+s) || (len(s) > 8 && strings.Contains(v, s))) {
				t.Errorf("%s = %q holds the caller's %q", where, v, s)
			}
		}
	}
	for _, s := range spans {
		if s.attrs["agent_gateway.upstream"] != "" && s.attrs["url.template"] == "other" {
			t.Errorf("an %s exchange matched no route template (add it to the client's Routes)", s.attrs["agent_gateway.upstream"])
		}
		check("span name", s.name)
		for k, v := range s.attrs {
			check(s.name+" "+k, v)
		}
	}
	rcv.mu.Lock()
	for _, kv := range rcv.resourceAttrs {
		check("resource", kv)
	}
	for _, p := range rcv.paths {
		if p != "/v1/traces" {
			t.Errorf("export went to %s, want /v1/traces", p)
		}
	}
	rcv.mu.Unlock()
}
