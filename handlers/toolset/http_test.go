package toolset

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// gateway is the MCP chain of one endpoint in front of the test toolset,
// recording the outcome of every tools/call.
type gateway struct {
	srv      *httptest.Server
	mu       sync.Mutex
	outcomes []string
	calls    map[string]int
}

func newGateway(t *testing.T) *gateway {
	t.Helper()
	g := &gateway{calls: map[string]int{}}
	c := New("test", "v0", "test toolset", testTools(g.calls)...)
	auth := middleware.AuthenticatorFunc(func(_ context.Context, bearer string) (*middleware.Principal, error) {
		switch bearer {
		case "consent-no-scopes":
			return &middleware.Principal{Kind: middleware.OAuthConsent, Key: "g1", ScopesKnown: true}, nil
		case "consent-docs":
			return &middleware.Principal{Kind: middleware.OAuthConsent, Key: "g2", Scopes: []string{"documents:read"}, ScopesKnown: true}, nil
		}
		return middleware.NewPassthrough(bearer), nil
	})
	const md = "http://gw.test/.well-known/oauth-protected-resource/mcp"
	var h http.Handler = c.HTTPHandler(slog.New(slog.DiscardHandler), HTTPOptions{})
	h = middleware.ScopeGate(c, middleware.Challenge{ResourceMetadataURL: md})(h)
	h = middleware.Authenticate(auth, middleware.AuthOptions{Challenge: middleware.Challenge{ResourceMetadataURL: md}})(h)
	h = middleware.MCPPeek(h)
	h = middleware.BodyLimit(middleware.MaxBodyBytes)(h)
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			rec := middleware.RecordFromContext(r.Context())
			if rec.Call().Method == "tools/call" {
				g.mu.Lock()
				g.outcomes = append(g.outcomes, rec.Call().Tool+":"+rec.Outcome())
				g.mu.Unlock()
			}
		})
	}
	g.srv = httptest.NewServer(middleware.RequestID(record(h)))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gateway) lastOutcome() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.outcomes) == 0 {
		return ""
	}
	return g.outcomes[len(g.outcomes)-1]
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an SDK client session to the gateway with a bearer ("" for none).
func (g *gateway) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolset-test", Version: "v0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: g.srv.URL, HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestHTTPToolLists(t *testing.T) {
	g := newGateway(t)
	cases := []struct {
		name  string
		token string
		want  []string
	}{
		{"anonymous sees only anonymous tools", "", []string{"public_echo"}},
		{"passthrough principal sees all", "forge-token", []string{"doc_secret", "forge_private", "public_echo"}},
		{"consent sees all", "consent-docs", []string{"doc_secret", "forge_private", "public_echo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := g.connect(t, tc.token).ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if tool.InputSchema == nil {
					t.Errorf("%s has no input schema", tool.Name)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Fatalf("tools %v, want %v", names, tc.want)
			}
		})
	}
}

func TestHTTPToolCalls(t *testing.T) {
	g := newGateway(t)
	cases := []struct {
		name    string
		token   string
		tool    string
		args    map[string]any
		errText string // a client error containing this; "" for a result
		isError bool
		text    string
		outcome string
	}{
		{"anonymous call of an anonymous tool", "", "public_echo", map[string]any{"text": "<&>"}, "", false, `{"echo":"<&>","html":"<b>&amp;</b>"}`, "public_echo:ok"},
		{"invalid arguments are a tool result", "", "public_echo", map[string]any{"text": 5}, "", true, "", "public_echo:invalid_arguments"},
		{"anonymous call of a bearer tool is 401", "", "forge_private", map[string]any{"text": "x"}, "Unauthorized", false, "", "forge_private:unauthenticated"},
		{"passthrough call", "forge-token", "forge_private", map[string]any{"text": "x"}, "", false, `["x"]`, "forge_private:ok"},
		{"tool failure", "forge-token", "forge_private", map[string]any{"text": "fail"}, "", true, `{"error":{"code":"not_found","message":"no such <thing>","native_status":404}}`, "forge_private:not_found"},
		{"passthrough lacks gateway scopes: 403", "forge-token", "doc_secret", map[string]any{"text": "x"}, "Forbidden", false, "", "doc_secret:insufficient_scope"},
		{"consent without the scope: 403", "consent-no-scopes", "doc_secret", map[string]any{"text": "x"}, "Forbidden", false, "", "doc_secret:insufficient_scope"},
		{"consent with the scope", "consent-docs", "doc_secret", map[string]any{"text": "x"}, "", false, `"secret"`, "doc_secret:ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := g.connect(t, tc.token)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want one mentioning %s", err, tc.errText)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				text := oneText(t, res)
				if res.IsError != tc.isError || (tc.text != "" && text != tc.text) {
					t.Fatalf("isError %v text %s", res.IsError, text)
				}
			}
			if got := g.lastOutcome(); got != tc.outcome {
				t.Fatalf("recorded outcome %q, want %q", got, tc.outcome)
			}
		})
	}
	if g.calls["doc_secret"] != 1 {
		t.Fatalf("doc_secret ran %d times, want only for the scoped consent", g.calls["doc_secret"])
	}
}

// TestHTTPMemberSmuggling sends raw JSON-RPC bodies whose members the gate
// and the SDK could read differently; none may run the scoped tool.
func TestHTTPMemberSmuggling(t *testing.T) {
	g := newGateway(t)
	bodies := map[string]string{
		"long s params":  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"doc_secret","arguments":{"text":"x"}},"paramſ":{"name":"public_echo","arguments":{"text":"x"}}}`,
		"upper params":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"doc_secret","arguments":{"text":"x"}},"PARAMS":{"name":"public_echo","arguments":{"text":"x"}}}`,
		"duplicate name": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"doc_secret","name":"public_echo","arguments":{"text":"x"}}}`,
		"case name":      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"doc_secret","NAME":"public_echo","arguments":{"text":"x"}}}`,
		"case method":    `{"jsonrpc":"2.0","id":1,"method":"tools/call","METHOD":"tools/list","params":{"name":"doc_secret","arguments":{"text":"x"}}}`,
		"escaped name":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"doc_secret","name":"public_echo","arguments":{"text":"x"}}}`,
		// The SDK's decoder reads the first value and ignores the rest.
		"trailing garbage": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"doc_secret","arguments":{"text":"x"}}} x`,
		"trailing message": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"doc_secret","arguments":{"text":"x"}}}{}`,
		"trailing NUL":     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"doc_secret\",\"arguments\":{\"text\":\"x\"}}}\x00",
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, g.srv.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer consent-no-scopes")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode < 400 {
				t.Errorf("status %d: %s", resp.StatusCode, got)
			}
			if bytes.Contains(got, []byte("secret")) && !bytes.Contains(got, []byte("doc_secret")) {
				t.Errorf("scoped tool answered: %s", got)
			}
		})
	}
	if g.calls["doc_secret"] != 0 {
		t.Fatalf("the scoped tool ran %d times", g.calls["doc_secret"])
	}
}
