package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestPullDiffNoPageDeadline (docs/architecture.md#upstream-transport: "No
// total job deadline is added"): with http.write_timeout at 1 s, a page whose
// evidence trickles in for about four seconds still arrives whole; an
// upstream that stalls gives upstream_timeout, not a cut connection; a client
// that goes away makes the gateway stop reading the upstream at once.
func TestPullDiffNoPageDeadline(t *testing.T) {
	logs := &syncWriter{}
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: t.TempDir(), Logf: func(format string, args ...any) {
		fmt.Fprintf(logs, format+"\n", args...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	d, err := emu.SeedDemo()
	if err != nil {
		t.Fatal(err)
	}
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN":     emu.URL(),
		"AGENT_GATEWAY_HTTP_WRITE_TIMEOUT": "1s",
		"AGENT_GATEWAY_FORGEJO_IO_TIMEOUT": "2s",
	}})
	diff := bytes.Repeat([]byte("+a line of a slowly generated diff\n"), 1500) // 52,500 bytes, ~70 KB of evidence
	index := d.OpenPull
	if err := emu.SetSyntheticDiff(d.Owner, d.PublicRepo, index, func() io.Reader { return bytes.NewReader(diff) }); err != nil {
		t.Fatal(err)
	}
	route := fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d.diff", d.Owner, d.PublicRepo, index)
	args := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": index}
	s, _ := measuredSession(t, gw.URL+"/mcp/forgejo", d.ReaderToken)

	t.Run("a trickle longer than the write timeout", func(t *testing.T) {
		st := time.Now()
		emu.SetFault(route, forgejoemu.Fault{Kind: forgejoemu.FaultSlowBody, ChunkBytes: 4096, Delay: 250 * time.Millisecond})
		defer emu.ClearFaults()
		p, out := callDiff(t, s, args)
		if p == nil {
			t.Fatalf("refused: %v", out)
		}
		checkPage(t, p)
		if took := time.Since(st); took < 3*time.Second {
			t.Fatalf("the page took %s: the trickle did not outlast the 1 s write timeout", took)
		}
	})
	t.Run("a stalled upstream", func(t *testing.T) {
		emu.SetFault(route, forgejoemu.Fault{Kind: forgejoemu.FaultSlowBody, ChunkBytes: 4096, Delay: 3500 * time.Millisecond})
		defer emu.ClearFaults()
		p, out := callDiff(t, s, args)
		wantDiffError(t, p, out, "upstream_timeout")
	})
	t.Run("the client goes away", func(t *testing.T) {
		emu.SetFault(route, forgejoemu.Fault{Kind: forgejoemu.FaultSlowBody, ChunkBytes: 1024, Delay: 200 * time.Millisecond})
		defer emu.ClearFaults()
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		a := mustJSON(t, args)
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + diffTool + `","arguments":` + a + `}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/mcp/forgejo", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+d.ReaderToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("HTTP %d before the trickle (about 14 s) could end", resp.StatusCode)
		}
		left := time.Now()
		// The evidence trickles for about 14 s; the gateway must drop it
		// as soon as its caller is gone.
		for !strings.Contains(logs.String(), "the client went away") {
			if time.Since(left) > 5*time.Second {
				t.Fatalf("the gateway went on reading the upstream for 5 s after its client left:\n%s", logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("the upstream read ended %s after the client left", time.Since(left).Round(10*time.Millisecond))
	})
}
