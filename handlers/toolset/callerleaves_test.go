package toolset

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// TestHTTPCallerLeaves: a call whose caller goes away is cancelled, so its
// handler (and any upstream request made with its context) ends at once
// instead of running to completion for nobody.
func TestHTTPCallerLeaves(t *testing.T) {
	ended := make(chan error, 1)
	c := New("test", "v0", "", Typed(Tool{Name: "wait", Description: "Waits for its context.", Policy: middleware.ToolPolicy{Anonymous: true}},
		func(ctx context.Context, _ echoArgs) (any, error) {
			select {
			case <-ctx.Done():
				ended <- context.Cause(ctx)
			case <-time.After(20 * time.Second):
				ended <- nil
			}
			return "done", nil
		}))
	h := middleware.MCPPeek(c.HTTPHandler(slog.New(slog.DiscardHandler), HTTPOptions{}))
	srv := httptest.NewServer(middleware.RequestID(h))
	t.Cleanup(srv.Close)
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			meta := ""
			if version >= "2026-07-28" {
				meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{}},`
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `"name":"wait","arguments":{"text":"x"}}}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", version)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "wait")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("HTTP %d before the tool could end", resp.StatusCode)
			}
			select {
			case err := <-ended:
				switch {
				case err == nil:
					t.Fatal("the tool ran to its end although its caller had left")
				case version < "2026-07-28" && !errors.Is(err, ErrCallerGone):
					// The SDK ends the newer revision's context itself.
					t.Fatalf("the call ended with %v, want ErrCallerGone", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the tool still ran 5 s after its caller left")
			}
		})
	}
}
