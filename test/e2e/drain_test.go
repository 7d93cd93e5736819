package e2e

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShutdownDrain: after SIGTERM, for shutdown_drain, /readyz answers 503
// "draining" while the listener still serves MCP calls, so a load
// balancer stops sending before any connection is refused; then the
// process stops. (Before, SIGTERM closed the listener at once.)
func TestShutdownDrain(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_SHUTDOWN_DRAIN": "3s"})
	start := time.Now()
	if err := st.gw.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var readyz, call int
	var body string
	deadline := start.Add(2 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(st.gw.URL + "/readyz")
		if err != nil {
			t.Fatalf("/readyz during the drain: %v (the listener closed %s after SIGTERM)", err, time.Since(start))
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		readyz, body = resp.StatusCode, string(b)
		if readyz == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if readyz != http.StatusServiceUnavailable || !strings.Contains(body, `"status":"draining"`) {
		t.Fatalf("/readyz after SIGTERM: %d %s, want 503 draining", readyz, body)
	}
	resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if call = resp.StatusCode; call != http.StatusOK || time.Since(start) >= 3*time.Second {
		t.Fatalf("a call during the drain: %d %s after %s", call, out, time.Since(start))
	}
	if err, ok := st.gw.Wait(15 * time.Second); !ok || err != nil {
		t.Fatalf("the gateway did not stop cleanly after the drain: %v (exited %v)", err, ok)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Fatalf("stopped %s after SIGTERM, before shutdown_drain (3s) ran out", took)
	}
}
