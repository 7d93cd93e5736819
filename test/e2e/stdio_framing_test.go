package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/handlers/forgejotools"
)

// TestStdioRefusesSplitMessages: over stdio a line must be one complete
// JSON-RPC message. A call split over two lines, whose second line sets
// the reserved _meta id to a short one, is answered with two parse errors
// (-32700, id null) and never runs — the SDK's decoder would have joined
// the lines, fitted the page to the smuggled id and written a line over
// the 49,000-byte bound; the session goes on, and the same smuggling on
// one line is overwritten.
func TestStdioRefusesSplitMessages(t *testing.T) {
	emu, d := startDemoEmulator(t)
	p := addPullWithFiles(t, emu, d.Owner, d.PrivateRepo, "topic/stdio-framing", mixedFiles())
	s := startRawStdio(t, "AGENT_GATEWAY_FORGEJO_ORIGIN="+emu.URL(), "AGENT_GATEWAY_FORGEJO_TOKEN="+d.ReaderToken)

	rawID := strings.Repeat("x", 3000)
	args, _ := json.Marshal(map[string]any{"owner": d.Owner, "repo": d.PrivateRepo, "index": p.Index()})
	head := `{"jsonrpc":"2.0","id":"` + rawID + `","method":"tools/call",`
	tail := `"params":{"name":"` + diffTool + `","arguments":` + string(args) + `,"_meta":{"agent-gateway/stdio-request-id":"1"}}}`

	s.send(head)
	s.send(tail)
	for i := range 2 {
		line := s.receive()
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
				Data struct {
					Code string `json:"code"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatalf("answer %d: %v: %.300s", i, err, line)
		}
		if msg.Result != nil {
			t.Fatalf("answer %d: the split call ran, its page fitted to the smuggled id: a line of %d bytes (bound %d)", i, len(line), forgejotools.EnvelopeLimit)
		}
		if msg.Error == nil || msg.Error.Code != -32700 || msg.Error.Data.Code != "parse_error" || string(msg.ID) != "null" {
			t.Fatalf("answer %d: %.300s, want a -32700 parse_error with id null", i, line)
		}
	}

	s.send(head + tail)
	line := s.receive()
	var msg struct {
		ID     string `json:"id"`
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &msg); err != nil || msg.ID != rawID || msg.Result.IsError {
		t.Fatalf("the call on one line: %v %.300s", err, line)
	}
	if len(line) > forgejotools.EnvelopeLimit {
		t.Fatalf("the call on one line was fitted to the smuggled id: a line of %d bytes, over %d", len(line), forgejotools.EnvelopeLimit)
	}
}
