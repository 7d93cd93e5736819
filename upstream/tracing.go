package upstream

import (
	"net/http"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing makes every exchange with the origin a client span, a child of
// the MCP call's span. Spans carry the origin, the method, the route
// TEMPLATE and the status, never the concrete path or query: those hold
// the caller's owner, repository, path and commit.
type Tracing struct {
	// Tracer starts the spans.
	Tracer trace.Tracer
	// Routes are the origin's route templates, as /a/{b}/c, where {b}
	// matches one path segment, {b}.diff one segment with that suffix and
	// {b...} the rest of the path. A path no template matches is "other".
	Routes []string
	// Propagate sends the W3C traceparent to the origin. Only for an
	// origin the operator runs (Forgejo): a third party (GitHub) learns
	// nothing of the gateway's traces.
	Propagate bool
}

// tracingTransport is the RoundTripper that opens the client span around
// one exchange (until the response headers or the failure).
type tracingTransport struct {
	next      http.RoundTripper
	tracer    trace.Tracer
	routes    []routeTemplate
	propagate bool
	upstream  string
}

func newTracingTransport(next http.RoundTripper, name string, t *Tracing) http.RoundTripper {
	tt := &tracingTransport{next: next, tracer: t.Tracer, propagate: t.Propagate, upstream: name}
	for _, r := range t.Routes {
		tt.routes = append(tt.routes, parseRouteTemplate(r))
	}
	return tt
}

// RoundTrip implements http.RoundTripper.
func (t *tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	route := matchRoute(t.routes, req.URL.EscapedPath())
	ctx, span := t.tracer.Start(req.Context(), req.Method+" "+route,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("agent_gateway.upstream", t.upstream),
			attribute.String("http.request.method", req.Method),
			attribute.String("url.scheme", req.URL.Scheme),
			attribute.String("server.address", req.URL.Hostname()),
			attribute.String("server.port", req.URL.Port()),
			attribute.String("url.template", route),
		))
	defer span.End()
	req = req.Clone(ctx)
	// Whatever the caller sent is never forwarded (the gateway builds each
	// request), so the header is set or removed here, never passed through.
	req.Header.Del("traceparent")
	req.Header.Del("tracestate")
	if t.propagate {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		// The kind, not the message: a transport error quotes the URL.
		span.SetStatus(codes.Error, "transport error")
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	return resp, nil
}

// routeTemplate is a parsed route template, one entry per path segment.
type routeTemplate struct {
	text     string
	segments []routeSegment
}

type routeSegment struct {
	literal string // when not a parameter
	param   bool
	suffix  string // {x}.diff: the literal after the parameter
	rest    bool   // {x...}: one or more remaining segments
}

func parseRouteTemplate(s string) routeTemplate {
	t := routeTemplate{text: s}
	for _, part := range strings.Split(strings.Trim(s, "/"), "/") {
		if !strings.HasPrefix(part, "{") {
			t.segments = append(t.segments, routeSegment{literal: part})
			continue
		}
		end := strings.IndexByte(part, '}')
		if end < 0 {
			panic("upstream: route template " + s + ": unclosed parameter")
		}
		name := part[1:end]
		t.segments = append(t.segments, routeSegment{param: true, suffix: part[end+1:], rest: strings.HasSuffix(name, "...")})
	}
	return t
}

// otherRoute names a path no template matches; the path itself is never
// recorded.
const otherRoute = "other"

// matchRoute returns the first template matching the escaped path.
func matchRoute(routes []routeTemplate, escapedPath string) string {
	parts := strings.Split(strings.Trim(escapedPath, "/"), "/")
	for _, r := range routes {
		if r.match(parts) {
			return r.text
		}
	}
	return otherRoute
}

func (r routeTemplate) match(parts []string) bool {
	for i, seg := range r.segments {
		if seg.rest {
			return i == len(r.segments)-1 && len(parts) > i && !slices.Contains(parts[i:], "")
		}
		if i >= len(parts) {
			return false
		}
		p := parts[i]
		switch {
		case !seg.param && p != seg.literal:
			return false
		case seg.param && (len(p) <= len(seg.suffix) || !strings.HasSuffix(p, seg.suffix)):
			return false
		}
	}
	return len(parts) == len(r.segments)
}
