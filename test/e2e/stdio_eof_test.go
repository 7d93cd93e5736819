package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestStdioAnswersBeforeEOF pipes a whole session into `agent-gateway
// stdio` and closes its input at once, as `printf … | agent-gateway stdio`
// does: initialize, initialized, tools/list and a tools/call that reaches
// the emulated Forgejo. Every request read before the end of the input is
// answered on stdout, in full, and the process exits 0. The SDK ends its
// session at the end of the input; it lost the answers still being worked
// on (nothing, or only initialize's, in most runs), so the test repeats.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	emu, d := startDemoEmulator(t)
	session := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e-stdio-eof","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_pull_request","arguments":{"owner":%q,"repo":%q,"index":%d}}}`, d.Owner, d.PublicRepo, d.ClosedPull),
	}, "\n") + "\n"
	for run := range 5 {
		cmd := exec.Command(gatewaytest.Binary(t), "stdio")
		cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+t.TempDir(), "AGENT_GATEWAY_FORGEJO_ORIGIN="+emu.URL())
		cmd.Stdin = strings.NewReader(session)
		stdout, logs, err := runBounded(t, cmd, time.Minute)
		if err != nil {
			t.Fatalf("run %d: stdio exited with %v\n%s", run, err, logs)
		}
		answers := map[int]json.RawMessage{}
		for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.Result == nil {
				t.Fatalf("run %d: a line that is no result (%v): %q\nstdout:\n%s", run, err, line, stdout)
			}
			answers[m.ID] = m.Result
		}
		if len(answers) != 3 || answers[1] == nil || answers[2] == nil || answers[3] == nil {
			t.Fatalf("run %d: answers to %d of the 3 requests; stdout:\n%s\nlog:\n%s", run, len(answers), stdout, logs)
		}
		if !strings.Contains(string(answers[2]), `"get_pull_request"`) {
			t.Fatalf("run %d: tools/list answered %s", run, answers[2])
		}
		var call struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(answers[3], &call); err != nil || call.IsError || len(call.Content) != 1 || !strings.Contains(call.Content[0].Text, `"state":"closed"`) {
			t.Fatalf("run %d: tools/call answered %s", run, answers[3])
		}
	}
}
