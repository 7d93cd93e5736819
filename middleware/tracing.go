package middleware

import (
	"net/http"
	"net/netip"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceOptions configure Trace.
type TraceOptions struct {
	// Tracer starts the call spans.
	Tracer trace.Tracer
	// TrustedParents are the peers whose W3C traceparent is continued: the
	// trusted proxies (http.trusted_proxies). Anyone else's is ignored and
	// the call starts its own trace, because a caller who picks the trace
	// ID can splice its calls into another caller's trace, and one who
	// sets the sampled flag decides what the gateway exports.
	TrustedParents []netip.Prefix
	// Known reports whether a tool name belongs to the toolset; any other
	// name is recorded as "unknown" (the caller chose it).
	Known func(tool string) bool
}

// mcpMethods are the JSON-RPC methods recorded by name; any other method
// is the caller's text and is recorded as "other".
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"resources/list": true, "prompts/list": true, "logging/setLevel": true,
}

// Trace makes each MCP request one server span: the JSON-RPC method, the
// tool and the outcome code, never the arguments, the bearer or the
// cursor. Upstream and store calls made for it are its children. It sits
// outermost in the MCP chain, so refusals of the chain are spans too.
func Trace(o TraceOptions) func(http.Handler) http.Handler {
	if o.Tracer == nil {
		panic("middleware.Trace: nil tracer")
	}
	trusted := func(remote string) bool {
		a := peerAddr(remote)
		if !a.IsValid() {
			return false
		}
		for _, p := range o.TrustedParents {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if trusted(r.RemoteAddr) {
				ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
			} else {
				// Drop any remote parent an outer layer may have put there.
				ctx = trace.ContextWithSpanContext(ctx, trace.SpanContext{})
			}
			route := r.URL.Path
			if rc := chi.RouteContext(ctx); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			ctx, span := o.Tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route)))
			defer span.End()
			sw, ok := w.(*statusWriter)
			if !ok {
				sw = &statusWriter{ResponseWriter: w}
			}
			next.ServeHTTP(sw, r.WithContext(ctx))

			rec := RecordFromContext(ctx)
			call := rec.Call()
			method := call.Method
			if method != "" && !mcpMethods[method] {
				method = "other"
			}
			tool := call.Tool
			if tool != "" && (o.Known == nil || !o.Known(tool)) {
				tool = "unknown"
			}
			outcome := rec.Outcome()
			if outcome == "" {
				outcome = "none"
			}
			attrs := []attribute.KeyValue{
				attribute.String("agent_gateway.outcome", outcome),
				attribute.Int("http.response.status_code", sw.Status()),
			}
			if method != "" {
				attrs = append(attrs, attribute.String("mcp.method.name", method))
				name := method
				if tool != "" {
					attrs = append(attrs, attribute.String("gen_ai.tool.name", tool))
					name += " " + tool
				}
				span.SetName(name)
			}
			span.SetAttributes(attrs...)
			if outcome != "ok" && outcome != "none" {
				span.SetStatus(codes.Error, outcome)
			}
		})
	}
}
