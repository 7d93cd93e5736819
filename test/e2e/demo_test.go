package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDemo runs `agent-gateway demo` as a new user would, reads what it
// prints, and makes the calls it suggests: the anonymous tool list, a
// verified diff page with the printed Forgejo token, and the runtime
// document with the printed gateway token.
func TestDemo(t *testing.T) {
	addr := gatewaytest.FreeAddr(t)
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
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("data race in the demo:\n%s", stderr.String())
		}
	})

	printed := map[string]string{}
	patterns := map[string]*regexp.Regexp{
		"forgejo":   regexp.MustCompile(`Forgejo endpoint\s+(\S+)`),
		"fjtoken":   regexp.MustCompile(`a Forgejo token\s+(\S+)`),
		"documents": regexp.MustCompile(`documents endpoint\s+(\S+)`),
		"token":     regexp.MustCompile(`a gateway token\s+(\S+)`),
		"source":    regexp.MustCompile(`= source (\S+)`),
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(90 * time.Second)
	for len(printed) < len(patterns) {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("demo exited early; printed %v\n%s", printed, stderr.String())
			}
			for k, re := range patterns {
				if m := re.FindStringSubmatch(line); m != nil {
					printed[k] = m[1]
				}
			}
		case <-deadline:
			t.Fatalf("demo printed only %v\n%s", printed, stderr.String())
		}
	}
	go func() {
		for range lines { // keep draining so the demo never blocks on stdout
		}
	}()

	fj := gatewaytest.ConnectURL(t, printed["forgejo"], "")
	if got := toolNames(t, fj); strings.Join(got, ",") != strings.Join(anonymousTools, ",") {
		t.Fatalf("demo tools/list = %v", got)
	}
	authed := gatewaytest.ConnectURL(t, printed["forgejo"], printed["fjtoken"])
	page, out := callDiff(t, authed, map[string]any{"owner": "demo", "repo": "gateway", "index": 1})
	if page == nil || page.ChunkBytes == 0 {
		t.Fatalf("demo diff page: %v", out)
	}
	docs := gatewaytest.ConnectURL(t, printed["documents"], printed["token"])
	doc, isErr := callTool(t, docs, "git_document_get", map[string]any{"source_id": printed["source"]})
	if isErr || doc["content"] == "" || doc["next_cursor"] == nil {
		t.Fatalf("demo document: %v", doc)
	}
}
