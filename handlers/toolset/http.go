package toolset

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// MaxRequestBodyBytes is the SDK's own body bound; the middleware chain
// refuses larger bodies first, with the same limit.
const MaxRequestBodyBytes = middleware.MaxBodyBytes

// HTTPHandler serves the toolset over MCP Streamable HTTP, stateless with
// JSON responses, so any replica can answer any request. A request with a
// principal sees every tool; an anonymous one only the anonymous tools.
//
// A call ends when its caller leaves (docs/security.md, "a caller that
// disconnects"): its handler's context, and with it every upstream request
// made with that context, is cancelled as soon as the HTTP request's is.
// The SDK ties the two only for protocol 2026-07-28 and later
// (PropagateRequestCancellation); for the older revisions its handler
// context never ends, and its session waits for the handler, so a call
// whose caller gave up held its request slot, goroutines and upstream
// connection for as long as the upstream kept trickling. WithCaller carries
// the request's context to the tool handler, which ends with it.
//
// Stateless tools/call is served by the gateway's own path (owned.go) with
// the same tool handlers and byte-identical answers, unless o.SDKOnly; every
// other request, and any call that path does not fully understand, is the
// SDK's.
func (c *Toolset) HTTPHandler(log *slog.Logger, o HTTPOptions) http.Handler {
	full := c.Server(nil, log)
	anonymous := c.Server(func(t Tool) bool { return t.Policy.Anonymous }, log)
	opts := streamableOptions(log)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if middleware.PrincipalFromContext(r.Context()) != nil {
			return full
		}
		return anonymous
	}, opts)
	if !o.SDKOnly && !sdkDebugSet() {
		h = &ownedPath{opts: opts, sdk: h,
			full:      c.ownedTools(nil, log),
			anonymous: c.ownedTools(func(t Tool) bool { return t.Policy.Anonymous }, log)}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(WithCaller(r.Context())))
	})
}

// streamableOptions are the SDK handler's options: the owned path reads
// the same value, so a guard that depends on one follows it.
func streamableOptions(log *slog.Logger) *mcp.StreamableHTTPOptions {
	return &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		JSONResponse:                 true,
		MaxRequestBodyBytes:          MaxRequestBodyBytes,
		Logger:                       quiet(log),
		PropagateRequestCancellation: true,
	}
}

// HTTPOptions are the choices of HTTPHandler.
type HTTPOptions struct {
	// SDKOnly sends every request to the SDK's handler: the owned
	// tools/call path (owned.go) is off (setting mcp.owned_tool_calls).
	SDKOnly bool
}

// ErrCallerGone is the cause of a call's context that ended because its
// caller left (the HTTP request's context ended before the answer).
var ErrCallerGone = errors.New("the caller went away")

type callerKey struct{}

// WithCaller marks ctx as the context of the HTTP request that carries a
// call: a tool handler running under it (its values pass through the SDK)
// is cancelled with ErrCallerGone when ctx ends.
func WithCaller(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, ctx)
}

// boundToCaller returns ctx cancelled, with cause ErrCallerGone, when the
// caller's request context (WithCaller) ends; without one (stdio, tests
// calling a handler directly) ctx is returned as it is. release must be
// called when the call is done.
func boundToCaller(ctx context.Context) (context.Context, func()) {
	caller, ok := ctx.Value(callerKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(caller, func() { cancel(ErrCallerGone) })
	return ctx, func() { stop(); cancel(nil) }
}

// quiet keeps the SDK's per-session chatter (a "session connected" line for
// every stateless request) out of the log; its warnings and errors stay.
func quiet(log *slog.Logger) *slog.Logger {
	if log == nil {
		return nil
	}
	return slog.New(levelFloor{log.Handler(), slog.LevelWarn})
}

type levelFloor struct {
	slog.Handler
	min slog.Level
}

func (l levelFloor) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.Handler.Enabled(ctx, lv)
}

func (l levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFloor{l.Handler.WithAttrs(a), l.min}
}

func (l levelFloor) WithGroup(n string) slog.Handler {
	return levelFloor{l.Handler.WithGroup(n), l.min}
}
