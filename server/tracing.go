package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// tracerName is the instrumentation scope of every span the gateway makes.
const tracerName = "github.com/agent-gateway/agent-gateway"

// tracingShutdownTimeout bounds the last flush of buffered spans at close.
const tracingShutdownTimeout = 5 * time.Second

// startTracing wires OpenTelemetry traces when tracing.otlp_endpoint is
// set and returns nil otherwise: with tracing off no middleware, transport
// wrapper or store decorator is installed, so it costs nothing. Spans are
// batched (a bounded queue that drops when the collector lags) and sent
// over OTLP/HTTP by the gateway's strict upstream client: a fixed origin,
// no redirects, no ambient proxy, an I/O timeout.
func (g *Gateway) startTracing() trace.Tracer {
	if g.cfg.TracingEndpoint == nil {
		return nil
	}
	setOTelErrorHandler.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			g.log.Warn("tracing: export failed", "error", err.Error())
		}))
	})
	exp := otlptrace.NewUnstarted(newOTLPClient(g.cfg.TracingEndpoint))
	res := resource.NewSchemaless(
		attribute.String("service.name", "agent-gateway"),
		attribute.String("service.version", Version),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// A trusted parent's sampling decision stands (middleware.Trace
		// only continues the trusted proxies'); a new trace is sampled at
		// tracing.sample_ratio.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(g.cfg.TracingSampleRatio))),
	)
	g.closers = append(g.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
		defer cancel()
		return tp.Shutdown(ctx)
	})
	g.log.Info("tracing on", "otlp_endpoint", g.cfg.TracingEndpoint.String(), "sample_ratio", g.cfg.TracingSampleRatio)
	return tp.Tracer(tracerName)
}

// setOTelErrorHandler sets the process-wide OpenTelemetry error handler
// once (tests start several gateways in one process).
var setOTelErrorHandler sync.Once

// upstreamTracing is the tracing of one upstream's exchanges, nil when
// tracing is off.
func (g *Gateway) upstreamTracing(routes []string, propagate bool) *upstream.Tracing {
	if g.tracer == nil {
		return nil
	}
	return &upstream.Tracing{Tracer: g.tracer, Routes: routes, Propagate: propagate}
}

// otlpClient sends span batches as OTLP/HTTP protobuf to <endpoint>/v1/traces.
type otlpClient struct {
	up       *upstream.Client
	segments []string
}

// otlpResponseLimit bounds what is read of a collector's answer.
const otlpResponseLimit = 64 << 10

func newOTLPClient(endpoint *url.URL) *otlpClient {
	origin := &url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host}
	var segments []string
	for _, s := range strings.Split(strings.Trim(endpoint.Path, "/"), "/") {
		if s != "" {
			segments = append(segments, s)
		}
	}
	return &otlpClient{
		up:       upstream.New(upstream.Config{Name: "otlp", Origin: origin, IOTimeout: 10 * time.Second}),
		segments: append(segments, "v1", "traces"),
	}
}

// Start implements otlptrace.Client.
func (c *otlpClient) Start(context.Context) error { return nil }

// Stop implements otlptrace.Client.
func (c *otlpClient) Stop(context.Context) error { c.up.CloseIdleConnections(); return nil }

// UploadTraces implements otlptrace.Client.
func (c *otlpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := encodeExportRequest(spans)
	if err != nil {
		return fmt.Errorf("otlp: encode: %w", err)
	}
	req, err := c.up.NewRequest(ctx, http.MethodPost, nil, bytes.NewReader(body), c.segments...)
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := c.up.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	defer resp.Body.Close()
	_, _ = upstream.ReadBounded(resp.Body, otlpResponseLimit, resp.ContentLength)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: collector answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// exportRequestSpans is the field number of resource_spans in the OTLP
// ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1/
// trace_service.proto), its only field.
const exportRequestSpans protowire.Number = 1

// encodeExportRequest encodes an OTLP ExportTraceServiceRequest holding
// spans, byte for byte what proto.Marshal gives for it
// (TestEncodeExportRequestMatchesProto). It is written out because the Go
// package of that one message also holds the collector's gRPC service,
// which would link grpc and grpc-gateway into the binary for one field.
func encodeExportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		b = protowire.AppendTag(b, exportRequestSpans, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(proto.Size(rs)))
		var err error
		if b, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(b, rs); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// storeSystem names the store backend for spans (db.system).
func storeSystem(databaseURL string) string {
	if strings.HasPrefix(databaseURL, "postgres") {
		return "postgresql"
	}
	return "sqlite"
}
