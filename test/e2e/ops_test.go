package e2e

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b)
}

// TestOperatorEndpoints: health, readiness, metrics and the landing page
// with the live toolset.
func TestOperatorEndpoints(t *testing.T) {
	st := startForgejoStack(t, nil)
	s := st.gw.Connect(t, "/mcp/forgejo", "")
	callTool(t, s, "get_repository", map[string]any{"owner": st.demo.Owner, "repo": st.demo.PublicRepo})

	if code, body := get(t, st.gw.URL+"/healthz"); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code, body := get(t, st.gw.URL+"/readyz"); code != 200 || !strings.Contains(body, "ready") {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	code, body := get(t, st.gw.URL+"/metrics")
	for _, want := range []string{
		`agent_gateway_http_requests_total{outcome="ok",route="/mcp/forgejo",status="200",tool="get_repository"}`,
		`agent_gateway_build_info{`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, body)
		}
	}
	// The series exists at 0 from the start (zeroKnownSeries): the call
	// must have moved it.
	if n := metricValue(t, body, "agent_gateway_upstream_requests_total", `failure="none",method="GET",status_class="2xx",upstream="forgejo"`); n < 1 {
		t.Fatalf("agent_gateway_upstream_requests_total for a Forgejo GET 2xx is %v after a call", n)
	}
	code, body = get(t, st.gw.URL+"/")
	for _, want := range append([]string{"/mcp/forgejo"}, anonymousTools...) {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("landing page lacks %s", want)
		}
	}
	if code, body := get(t, st.gw.URL+"/.well-known/oauth-protected-resource/mcp/forgejo"); code != 200 || !strings.Contains(body, st.emu.URL()) {
		t.Fatalf("resource metadata: %d %s", code, body)
	}
}

// TestGracefulShutdown: SIGTERM lets an in-flight call finish, refuses new
// connections, and the process exits cleanly.
func TestGracefulShutdown(t *testing.T) {
	st := startForgejoStack(t, nil)
	st.emu.SetFault("/api/v1/repos/"+st.demo.Owner, forgejoemu.Fault{Kind: forgejoemu.FaultSlow, Delay: 2 * time.Second})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"` + st.demo.Owner + `","repo":"` + st.demo.PublicRepo + `"}}}`
	var wg sync.WaitGroup
	var status int
	var out string
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, o := postRPC(t, st.gw.URL+"/mcp/forgejo", body, nil)
		status, out = resp.StatusCode, o
	}()
	time.Sleep(500 * time.Millisecond) // the call is now waiting on the slow upstream
	if err := st.gw.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := http.Get(st.gw.URL + "/healthz"); err == nil {
		t.Fatal("a new connection was accepted after SIGTERM")
	}
	wg.Wait()
	if status != 200 || strings.Contains(out, "isError") || !strings.Contains(out, st.demo.PublicRepo) {
		t.Fatalf("in-flight call did not finish: %d %s", status, out)
	}
	err, exited := st.gw.Wait(10 * time.Second)
	if !exited || err != nil {
		t.Fatalf("exit: exited=%v err=%v\n%s", exited, err, st.gw.Logs())
	}
}
