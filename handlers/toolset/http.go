package toolset

import (
	"context"
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
func (c *Toolset) HTTPHandler(log *slog.Logger) http.Handler {
	full := c.Server(nil, log)
	anonymous := c.Server(func(t Tool) bool { return t.Policy.Anonymous }, log)
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if middleware.PrincipalFromContext(r.Context()) != nil {
			return full
		}
		return anonymous
	}, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: MaxRequestBodyBytes,
		Logger:              quiet(log),
	})
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
