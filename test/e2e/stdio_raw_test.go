package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// rawStdio is `agent-gateway stdio` driven byte by byte, for what an SDK
// client would never send: lines are written as given and each line the
// process writes is read back whole.
type rawStdio struct {
	t     *testing.T
	stdin io.WriteCloser
	lines chan []byte
}

// startRawStdio starts `agent-gateway stdio` with env and initializes a
// 2025-06-18 session on it.
func startRawStdio(t *testing.T, env ...string) *rawStdio {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), "stdio")
	cmd.Env = append(os.Environ(), append([]string{"AGENT_GATEWAY_DATA_DIR=" + t.TempDir()}, env...)...)
	stdin, stdout, logs := startPiped(t, cmd)
	t.Cleanup(func() {
		gatewaytest.StopCommand(cmd, 10*time.Second, func() { stdin.Close() }, nil)
		if t.Failed() {
			t.Logf("stdio process log:\n%s", logs.String())
		}
	})
	s := &rawStdio{t: t, stdin: stdin, lines: make(chan []byte, 4)}
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				s.lines <- line
			}
			if err != nil {
				close(s.lines)
				return
			}
		}
	}()
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e-stdio-raw","version":"1"}}}`)
	s.receive()
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return s
}

// send writes msg and a newline.
func (s *rawStdio) send(msg string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, msg+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// receive returns the next line the process wrote, without its newline.
func (s *rawStdio) receive() []byte {
	s.t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.t.Fatal("stdout closed")
		}
		return bytes.TrimSuffix(line, []byte("\n"))
	case <-time.After(2 * time.Minute):
		s.t.Fatal("no response within 2 minutes")
	}
	return nil
}
