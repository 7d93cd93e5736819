package toolset

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// BenchmarkSDKFloor serves one tools/call through the bare SDK, configured
// as the gateway configures it (stateless, JSON responses), with a tool
// that returns a fixed text at once: no middleware, no upstream. It is the
// least any call through the official SDK can cost, the floor under the
// gateway's own figures in docs/performance.md.
//
// The fragment case returns what git_document_get returns for the first
// 64 KiB of the demo's document (already encoded, as the gateway hands it
// to the SDK), so it measures what the SDK alone adds to a fragment: the
// result is escaped once more into the text block and compacted again at
// each of its JSON layers.
func BenchmarkSDKFloor(b *testing.B) {
	fragment, err := EncodeJSON(map[string]any{"content": string(githubemu.MultiByteDocument(200 << 10)[:65534]), "ok": true})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		text string
	}{{"tiny", `{"ok":true}`}, {"fragment-64KiB", string(fragment)}} {
		b.Run(c.name, func(b *testing.B) { benchSDKFloor(b, c.text) })
	}
}

func benchSDKFloor(b *testing.B, text string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop","arguments":{}}}`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"ok\":true`)) {
			b.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkResultText is the result's text for a diff page: a
// json.RawMessage of about 57 KB (base64 data), taken as it is, against
// encoding it again with EncodeJSON as the handler did before (which ran
// encoding/json's compaction over the whole page).
func BenchmarkResultText(b *testing.B) {
	raw := make([]byte, 40000)
	for i := range raw {
		raw[i] = byte(i * 7919 >> 3)
	}
	page, err := EncodeJSON(map[string]any{"data": base64.StdEncoding.EncodeToString(raw), "eof": false})
	if err != nil {
		b.Fatal(err)
	}
	msg := json.RawMessage(page)
	b.Run("as-is", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			if text, err := resultText(msg); err != nil || len(text) != len(page) {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoded-again", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			if text, err := EncodeJSON(msg); err != nil || len(string(text)) != len(page) {
				b.Fatal(err)
			}
		}
	})
}
