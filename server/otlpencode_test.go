package server

import (
	"bytes"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestEncodeExportRequestMatchesProto: the hand-written encoding of the
// export request is byte-identical to proto.Marshal of the generated
// message (which only tests link), for no spans, one batch and several,
// and decodes back to the same request.
func TestEncodeExportRequestMatchesProto(t *testing.T) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	batch := func(service string, n int) *tracepb.ResourceSpans {
		var spans []*tracepb.Span
		for i := range n {
			spans = append(spans, &tracepb.Span{
				TraceId: bytes.Repeat([]byte{byte(i + 1)}, 16), SpanId: bytes.Repeat([]byte{byte(i + 2)}, 8),
				ParentSpanId: bytes.Repeat([]byte{9}, 8), Name: "GET /mcp/documents", Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: 1_764_000_000_000_000_000 + uint64(i), EndTimeUnixNano: 1_764_000_000_500_000_000,
				Attributes: []*commonpb.KeyValue{str("http.route", "/mcp/documents"), {Key: "http.response.status_code",
					Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 200}}}},
				Events: []*tracepb.Span_Event{{TimeUnixNano: 1, Name: "exception", Attributes: []*commonpb.KeyValue{str("exception.message", "ü")}}},
				Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream_timeout"},
			})
		}
		return &tracepb.ResourceSpans{
			Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", service)}},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: tracerName}, Spans: spans}},
			SchemaUrl:  "https://opentelemetry.io/schemas/1.26.0",
		}
	}
	for _, tc := range []struct {
		name  string
		spans []*tracepb.ResourceSpans
	}{
		{"none", nil},
		{"one batch", []*tracepb.ResourceSpans{batch("agent-gateway", 1)}},
		{"several, one large", []*tracepb.ResourceSpans{batch("agent-gateway", 3), batch("other", 0), batch("agent-gateway", 300)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := proto.Marshal(&collectortrace.ExportTraceServiceRequest{ResourceSpans: tc.spans})
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeExportRequest(tc.spans)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bytes differ from proto.Marshal's %d", len(got), len(want))
			}
			var back collectortrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(got, &back); err != nil || len(back.ResourceSpans) != len(tc.spans) {
				t.Fatalf("decoded %d batches, %v", len(back.ResourceSpans), err)
			}
		})
	}
}
