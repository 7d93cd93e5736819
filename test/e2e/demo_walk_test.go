package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// demoWalkTools are the tools the demo's walk-through must call, in the
// order of the walk-through: read, diff, confirm, approve, submit, read the
// receipt, bootstrap, read a document, list profiles, dispatch, read the
// workflow — all 16.
var demoWalkTools = []string{
	"search_repositories", "get_repository", "list_pull_requests", "get_pull_request",
	"list_agent_work_grants", "get_agent_work_grant", "get_pull_request_diff",
	"confirm_agent_work_grant", "submit_agent_work_proposal", "get_agent_work_submission",
	"runtime_bootstrap_get", "git_document_get", "catalog_profiles_list", "catalog_profile_get",
	"workflow_dispatch", "workflow_get",
}

// startDemoBanner runs the demo binary listening on addr and returns every
// line it prints up to "Stop with Ctrl-C."; the demo stops (and is checked
// for data races) when the test ends.
func startDemoBanner(t *testing.T, addr string) []string {
	t.Helper()
	cmd := exec.Command(gatewaytest.DemoBinary(t), "demo", "--listen", addr)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncWriter
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gatewaytest.StopCommand(cmd, 30*time.Second, func() { _ = cmd.Process.Signal(os.Interrupt) }, nil)
		if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("data race in the demo:\n%s", stderr.String())
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var banner []string
	deadline := time.After(90 * time.Second)
	for len(banner) == 0 || banner[len(banner)-1] != "Stop with Ctrl-C." {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("demo exited early\n%s\n%s", strings.Join(banner, "\n"), stderr.String())
			}
			banner = append(banner, line)
		case <-deadline:
			t.Fatalf("demo printed no whole banner\n%s\n%s", strings.Join(banner, "\n"), stderr.String())
		}
	}
	go func() {
		for range lines { // keep draining so the demo never blocks on stdout
		}
	}()
	return banner
}

// bannerCommands returns the shell commands of the banner: the indented
// lines that start with a command the walk-through uses (or a path, the
// demo binary's own), joined with their `\` continuations.
func bannerCommands(banner []string) []string {
	starts := regexp.MustCompile(`^  (curl |export |go run |git |WF=|claude |/|')`)
	var cmds []string
	for i := 0; i < len(banner); i++ {
		if !starts.MatchString(banner[i]) {
			continue
		}
		c := strings.TrimSpace(banner[i])
		for strings.HasSuffix(c, `\`) && i+1 < len(banner) {
			i++
			c = strings.TrimSuffix(c, `\`) + " " + strings.TrimSpace(banner[i])
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// TestDemoWalkThrough runs `agent-gateway demo` and then every command its
// banner prints, in order, in one shell in a scratch directory, and checks
// that each one succeeds (and prints no `go run .`, which compiles again
// and turns diff's exit codes into 1: the diff is read with the demo
// binary itself):
// every MCP call answers a result that is not an error, the approval makes
// the grant active, the diff applies. Only `claude mcp add` is not run: it
// needs the Claude client (TestOAuthClient covers an MCP client's login).
// The tools called are exactly the 16, in the walk-through's order.
func TestDemoWalkThrough(t *testing.T) {
	bin := gatewaytest.DemoBinary(t)
	banner := startDemoBanner(t, gatewaytest.FreeAddr(t))
	text := strings.Join(banner, "\n")
	for _, never := range []string{"notes", "private"} {
		if strings.Contains(text, never) {
			t.Errorf("the banner mentions %q, which no printed token can read:\n%s", never, text)
		}
	}
	var cmds, called []string
	nameRe := regexp.MustCompile(`"method":"tools/call","params":\{"name":"([a-z_]+)"`)
	for _, c := range bannerCommands(banner) {
		if strings.HasPrefix(c, "claude ") {
			continue
		}
		if m := nameRe.FindStringSubmatch(c); m != nil {
			called = append(called, m[1])
		}
		if strings.Contains(c, "go run ") {
			t.Errorf("the walk-through teaches `go run`: %s", c)
		}
		if strings.Contains(c, " diff --endpoint ") && !strings.HasPrefix(c, bin+" diff ") {
			t.Errorf("the diff command does not run the demo binary %s: %s", bin, c)
		}
		cmds = append(cmds, c)
	}
	if strings.Join(called, ",") != strings.Join(demoWalkTools, ",") {
		t.Fatalf("the walk-through calls\n  %v\nwant\n  %v", called, demoWalkTools)
	}
	// One shell, so the export and $WF carry over; a marker before each
	// command splits the output.
	var sh strings.Builder
	for i, c := range cmds {
		fmt.Fprintf(&sh, "echo '@@@ %d'\n%s\necho\n", i, c)
	}
	dir := t.TempDir()
	run := exec.Command("sh", "-e", "-c", sh.String())
	run.Dir = dir
	run.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the banner's commands: %v\n%s", err, out)
	}
	outputs := strings.Split(string(out), "@@@ ")[1:]
	if len(outputs) != len(cmds) {
		t.Fatalf("%d outputs for %d commands:\n%s", len(outputs), len(cmds), out)
	}
	for i, c := range cmds {
		_, got, _ := strings.Cut(outputs[i], "\n")
		if strings.Contains(c, "> workflow.json") {
			b, err := os.ReadFile(filepath.Join(dir, "workflow.json"))
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		}
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			switch {
			case strings.Contains(c, " diff --endpoint "):
				if b, err := os.ReadFile(filepath.Join(dir, "pr1.diff")); err != nil || len(b) == 0 {
					t.Fatalf("%s\nwrote no diff: %v", c, err)
				}
			case strings.Contains(c, "/mcp/"):
				checkMCPAnswer(t, c, got)
				// The demo's profile is complete: every layer but the
				// optional role instructions is configured.
				if strings.Contains(c, "> workflow.json") && !strings.Contains(got, `\"layers_missing\":[]`) {
					t.Fatalf("%s\nthe demo profile misses layers: %s", c, got)
				}
			case strings.Contains(c, "/approve"):
				if !strings.Contains(got, `"state":"active"`) {
					t.Fatalf("%s\nanswered %s", c, got)
				}
			case strings.Contains(c, "apply --check"):
				if !strings.Contains(got, "the verified diff applies") {
					t.Fatalf("%s\nanswered %s", c, got)
				}
			}
		})
	}
}

// checkMCPAnswer fails unless out is a JSON-RPC result that is not a tool
// error (and, for tools/list, lists tools).
func checkMCPAnswer(t *testing.T, cmd, out string) {
	t.Helper()
	var resp struct {
		Error  json.RawMessage `json:"error"`
		Result struct {
			IsError bool              `json:"isError"`
			Tools   []json.RawMessage `json:"tools"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &resp); err != nil {
		t.Fatalf("%s\nanswered no JSON-RPC response (%v): %s", cmd, err, out)
	}
	if resp.Error != nil || resp.Result.IsError {
		t.Fatalf("%s\nfailed: %s", cmd, out)
	}
	if strings.Contains(cmd, `"tools/list"`) {
		if len(resp.Result.Tools) == 0 {
			t.Fatalf("%s\nlisted no tools: %s", cmd, out)
		}
		return
	}
	if len(resp.Result.Content) != 1 || !json.Valid([]byte(resp.Result.Content[0].Text)) {
		t.Fatalf("%s\nanswered no JSON result: %s", cmd, out)
	}
}
