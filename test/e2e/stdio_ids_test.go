package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/forgejotools"
)

// TestPullDiffStdioRequestIDs (docs/architecture.md#page-fitting: page
// fitting accounts for the actual RPC id): over stdio each page is fitted to
// its own request's id, as over HTTP. With a 3,000-character id — three times
// the 1 KiB once reserved for an unknown one — every response line stays
// within 49,000 bytes, the pages are still filled to the bound, and they
// reassemble git's diff.
func TestPullDiffStdioRequestIDs(t *testing.T) {
	emu, d := startDemoEmulator(t)
	p := addPullWithFiles(t, emu, d.Owner, d.PrivateRepo, "topic/stdio-ids", mixedFiles())
	s := startRawStdio(t, "AGENT_GATEWAY_FORGEJO_ORIGIN="+emu.URL(), "AGENT_GATEWAY_FORGEJO_TOKEN="+d.ReaderToken)
	send, receive := s.send, s.receive

	// 3,000 characters, with characters JSON escapes (a quote, a
	// backslash, '<', a control character) so the id's encoded length
	// differs from its raw one.
	unit := `id-"\<` + "\t" + `é-x`
	rawID := strings.Repeat(unit, 3000/len([]rune(unit)))
	idJSON, _ := json.Marshal(rawID)
	if n := len([]rune(rawID)); n != 3000 {
		t.Fatalf("the id has %d characters", n)
	}
	args := map[string]any{"owner": d.Owner, "repo": d.PrivateRepo, "index": p.Index()}
	var diff []byte
	for page := 0; ; page++ {
		a, _ := json.Marshal(args)
		send(`{"jsonrpc":"2.0","id":` + string(idJSON) + `,"method":"tools/call","params":{"name":"` + diffTool + `","arguments":` + string(a) + `}}`)
		line := receive()
		var msg struct {
			ID     json.RawMessage    `json:"id"`
			Result mcp.CallToolResult `json:"result"`
		}
		if err := json.Unmarshal(line, &msg); err != nil || len(msg.Result.Content) != 1 {
			t.Fatalf("page %d: %v %.300s", page, err, line)
		}
		var id string
		if json.Unmarshal(msg.ID, &id) != nil || id != rawID {
			t.Fatalf("page %d: the response carries another id", page)
		}
		text := msg.Result.Content[0].(*mcp.TextContent).Text
		if msg.Result.IsError {
			t.Fatalf("page %d: %s", page, text)
		}
		if len(line) > forgejotools.EnvelopeLimit {
			t.Fatalf("page %d: a response line of %d bytes, over %d", page, len(line), forgejotools.EnvelopeLimit)
		}
		var pg diffPage
		if err := json.Unmarshal([]byte(text), &pg); err != nil {
			t.Fatal(err)
		}
		diff = append(diff, checkPage(t, &pg)...)
		if pg.EOF {
			break
		}
		// Still filled: a page other than the last comes within 1% of the
		// bound (the envelope is measured for the newest revision, whose
		// _meta this 2025-06-18 session does not get: ~100 bytes).
		if len(line) < forgejotools.EnvelopeLimit*99/100 {
			t.Fatalf("page %d: a response line of %d bytes is not filled", page, len(line))
		}
		args["cursor"] = *pg.NextCursor
	}
	if !bytes.Equal(diff, gitDiff(t, emu, d.Owner, d.PrivateRepo, p)) {
		t.Fatal("the pages read over stdio differ from git's diff")
	}
}
