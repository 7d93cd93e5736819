package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// BenchmarkAnonymousToolCall serves tools/call get_repository through the
// whole in-process router against the emulator, on the owned tools/call
// path and on the SDK's (mcp.owned_tool_calls off), side by side in one
// run; run with -cpuprofile to see where the gateway's time goes. The
// emulator's work is in the same process and in every figure.
func BenchmarkAnonymousToolCall(b *testing.B) {
	emu, d := benchEmulator(b)
	for _, p := range ownedPaths {
		b.Run(p.name, func(b *testing.B) { benchAnonymousCall(b, emu, d, p.configure) })
	}
}

// ownedPaths are the two ways the gateway serves a tools/call: its own
// path (the default) and the SDK's handler.
var ownedPaths = []struct {
	name      string
	configure func(*Config)
}{
	{"owned", nil},
	{"sdk", func(c *Config) { c.OwnedToolCalls = false }},
}

// benchEmulator starts the Core emulator with the demo's data for one
// benchmark; it stops when the benchmark ends.
func benchEmulator(b *testing.B) (*forgejoemu.Emulator, *forgejoemu.Demo) {
	b.Helper()
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = emu.Close() })
	d, err := emu.SeedDemo()
	if err != nil {
		b.Fatal(err)
	}
	return emu, d
}

// BenchmarkDiffPage serves page 0 of the demo's open pull request's diff
// (get_pull_request_diff with the reader's Forgejo token): the whole
// evidence answer verified, then one page fitted and encoded.
func BenchmarkDiffPage(b *testing.B) {
	emu, d := benchEmulator(b)
	args := fmt.Sprintf(`{"owner":%q,"repo":%q,"index":%d}`, d.Owner, d.PublicRepo, d.OpenPull)
	benchToolCall(b, emu, nil, d.ReaderToken, "get_pull_request_diff", args)
}

// benchAnonymousCall runs b.N get_repository calls through a gateway in
// front of emu, configured by Default plus configure (may be nil).
func benchAnonymousCall(b *testing.B, emu *forgejoemu.Emulator, d *forgejoemu.Demo, configure func(*Config)) {
	args := fmt.Sprintf(`{"owner":%q,"repo":%q}`, d.Owner, d.PublicRepo)
	benchToolCall(b, emu, configure, "", "get_repository", args)
}

// benchToolCall runs b.N calls of tool with args (a JSON object) on
// /mcp/forgejo, with bearer when it is not empty, through a gateway in
// front of emu configured by Default plus configure (may be nil).
func benchToolCall(b *testing.B, emu *forgejoemu.Emulator, configure func(*Config), bearer, tool, args string) {
	b.Helper()
	cfg := Default()
	cfg.DataDir = b.TempDir()
	cfg.ReadPerMinute = 1 << 30
	cfg.ForgejoOrigin, _ = upstream.ParseOrigin(emu.URL())
	cfg.PublicURL = "http://127.0.0.1:8080"
	if configure != nil {
		configure(&cfg)
	}
	g, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	benchCalls(b, g.Handler(), "/mcp/forgejo", bearer, tool, args, "")
}

// benchCalls times b.N tools/call requests of tool with args (a JSON
// object) to endpoint on h, with bearer when it is not empty. Each answer
// must be 200, not a tool error, and hold want when it is not empty. It
// reports the process's CPU per call too (cpu-µs/call: the gateway, the
// in-process emulator and the collector), which a machine shared with
// other jobs disturbs far less than the time per call.
func benchCalls(b *testing.B, h http.Handler, endpoint, bearer, tool, args, want string) {
	b.Helper()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
	b.ReportAllocs()
	b.ResetTimer()
	before := gatewaytest.SelfCPU(b)
	defer func() {
		b.StopTimer()
		b.ReportMetric(float64((gatewaytest.SelfCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/call")
	}()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || bytes.Contains(rec.Body.Bytes(), []byte(`"isError":true`)) || !bytes.Contains(rec.Body.Bytes(), []byte(want)) {
			b.Fatalf("%d %.300s", rec.Code, rec.Body.String())
		}
	}
}
