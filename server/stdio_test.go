package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdioOpensNoStore: stdio serves the Forgejo toolset without opening
// the store, so neither a configured data_dir nor the default ./data is
// created, and an existing one is left empty (no SQLite file, no cursor
// secret).
func TestStdioOpensNoStore(t *testing.T) {
	session := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n"
	for _, tc := range []struct {
		name    string
		dataDir func(t *testing.T) string
	}{
		{"a data_dir that does not exist", func(t *testing.T) string { return filepath.Join(t.TempDir(), "data") }},
		{"an empty data_dir", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dataDir(t)
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			var errOut bytes.Buffer
			code := make(chan int, 1)
			go func() {
				code <- Main([]string{"stdio", "--data-dir", dir}, Stdio{In: inR, Out: outW, Err: &errOut})
				outW.Close()
			}()
			go io.WriteString(inW, session)
			// The session stays open until tools/list is answered; then
			// stdin ends, as when the client goes away.
			tools := -1
			lines := bufio.NewScanner(outR)
			lines.Buffer(nil, 1<<20)
			for tools < 0 && lines.Scan() {
				tools = toolsListed(t, lines.Bytes())
			}
			inW.Close()
			go io.Copy(io.Discard, outR)
			if c := <-code; c != 0 {
				t.Fatalf("exit %d: %s", c, errOut.String())
			}
			if tools != 4 {
				t.Fatalf("stdio without a credential listed %d tools, want the 4 anonymous ones", tools)
			}
			entries, err := os.ReadDir(dir)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Fatalf("stdio wrote %v into data_dir", entries)
			}
		})
	}
}

// toolsListed returns how many tools a JSON-RPC line answering tools/list
// (id 2) lists, or -1 for any other line.
func toolsListed(t *testing.T, line []byte) int {
	t.Helper()
	var m struct {
		ID     int
		Result struct{ Tools []json.RawMessage }
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if m.ID != 2 {
		return -1
	}
	return len(m.Result.Tools)
}
