package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// metaID returns the id the reader put into a message's params._meta.
func metaID(t *testing.T, line string) (string, bool) {
	t.Helper()
	var m struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	id, ok := m.Params.Meta[stdioIDKey].(string)
	return id, ok
}

func TestIDReader(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		wantID string // "" for none
		same   bool   // the line passes through unchanged
	}{
		{"call with a number id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{}}}`, `7`, false},
		{"a large number stays digit-exact", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{}}`, `123456789012345678901234567890`, false},
		{"string id with escapes kept as sent", `{"jsonrpc":"2.0","id":"a\"b\\c\u00e9<","method":"tools/call","params":{}}`, `"a\"b\\c\u00e9<"`, false},
		{"existing _meta kept", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":3}}}`, `1`, false},
		{"a client's own key is overwritten", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"` + stdioIDKey + `":"1"}}}`, `2`, false},
		{"notification unchanged", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, "", true},
		{"null id unchanged", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`, "", true},
		{"response unchanged", `{"jsonrpc":"2.0","id":1,"result":{}}`, "", true},
		{"no params unchanged", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "", true},
		{"params not an object unchanged", `{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`, "", true},
		{"_meta not an object unchanged", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":5}}`, "", true},
		{"not JSON unchanged", `{"jsonrpc":`, "", true},
		{"blank line unchanged", ``, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := io.ReadAll(newIDReader(strings.NewReader(tc.in + "\r\n")))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(out, []byte("\r\n")) {
				t.Fatalf("the line ending was lost: %q", out)
			}
			line := strings.TrimSuffix(string(out), "\r\n")
			if tc.same {
				if line != tc.in {
					t.Fatalf("changed: %s", line)
				}
				return
			}
			id, ok := metaID(t, line)
			if !ok || id != tc.wantID {
				t.Fatalf("id %q (%v), want %q: %s", id, ok, tc.wantID, line)
			}
		})
	}

	t.Run("several lines and a batch", func(t *testing.T) {
		in := `{"jsonrpc":"2.0","id":1,"method":"a","params":{}}` + "\n" +
			`[{"jsonrpc":"2.0","id":2,"method":"b","params":{}},{"jsonrpc":"2.0","method":"n","params":{}}]` + "\n" +
			`{"jsonrpc":"2.0","id":"3","method":"c","params":{}}`
		out, _ := io.ReadAll(newIDReader(strings.NewReader(in)))
		lines := strings.Split(string(out), "\n")
		if len(lines) != 3 {
			t.Fatalf("%d lines: %s", len(lines), out)
		}
		if id, _ := metaID(t, lines[0]); id != "1" {
			t.Fatalf("line 1: %s", lines[0])
		}
		var batch []json.RawMessage
		_ = json.Unmarshal([]byte(lines[1]), &batch)
		if len(batch) != 2 {
			t.Fatalf("batch: %s", lines[1])
		}
		if id, _ := metaID(t, string(batch[0])); id != "2" {
			t.Fatalf("batch item: %s", batch[0])
		}
		if _, ok := metaID(t, string(batch[1])); ok {
			t.Fatalf("a notification got an id: %s", batch[1])
		}
		if id, _ := metaID(t, lines[2]); id != `"3"` {
			t.Fatalf("last line without newline: %s", lines[2])
		}
	})
	t.Run("an over-long line passes through unchanged", func(t *testing.T) {
		long := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", maxStdioLine) + `"}}`
		in := long + "\n" + `{"jsonrpc":"2.0","id":2,"method":"x","params":{}}` + "\n"
		out, err := io.ReadAll(newIDReader(strings.NewReader(in)))
		if err != nil {
			t.Fatal(err)
		}
		first, rest, _ := strings.Cut(string(out), "\n")
		if first != long {
			t.Fatalf("the over-long line changed (%d bytes, want %d)", len(first), len(long))
		}
		if id, _ := metaID(t, strings.TrimSuffix(rest, "\n")); id != "2" {
			t.Fatalf("the line after it: %.200s", rest)
		}
	})
}

// TestStdioCall: the id reaches the tool's record only over stdio; over
// HTTP a caller's _meta member is ignored (the chain recorded the call).
func TestStdioCall(t *testing.T) {
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x", Meta: mcp.Meta{stdioIDKey: `"the id"`}}}
	if got := middleware.RecordFromContext(stdioCall(context.Background(), "x", req)).Call().ID; got != nil {
		t.Fatalf("over HTTP the _meta id was used: %s", got)
	}
	ctx := context.WithValue(context.Background(), stdioKey{}, true)
	call := middleware.RecordFromContext(stdioCall(ctx, "x", req)).Call()
	if string(call.ID) != `"the id"` || call.Tool != "x" || call.Method != "tools/call" {
		t.Fatalf("over stdio: %+v", call)
	}
	if got := middleware.RecordFromContext(stdioCall(ctx, "x", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}})).Call().ID; got != nil {
		t.Fatalf("no id: %s", got)
	}
}
