package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// metaID returns the id the reader put into a message's params._meta;
// none when params or _meta is not an object.
func metaID(t *testing.T, line string) (string, bool) {
	t.Helper()
	var m struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			t.Fatalf("%v: %s", err, line)
		}
		return "", false
	}
	id, ok := m.Params.Meta[stdioIDKey].(string)
	return id, ok
}

// readFrames runs in through the frame reader and returns what the SDK
// would read and what was answered as refusals.
func readFrames(t *testing.T, in string) (frames, refusals string) {
	t.Helper()
	var refused bytes.Buffer
	out, err := io.ReadAll(newFrameReader(strings.NewReader(in), &refused))
	if err != nil {
		t.Fatal(err)
	}
	return string(out), refused.String()
}

func TestFrameReader(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		wantID string // "" for none
	}{
		{"call with a number id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{}}}`, `7`},
		{"a large number stays digit-exact", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{}}`, `123456789012345678901234567890`},
		{"string id with escapes kept as sent", `{"jsonrpc":"2.0","id":"a\"b\\c\u00e9<","method":"tools/call","params":{}}`, `"a\"b\\c\u00e9<"`},
		{"existing _meta kept", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":3}}}`, `1`},
		{"a null _meta becomes one", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":null}}`, `1`},
		{"a client's own key is overwritten", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"` + stdioIDKey + `":"1"}}}`, `2`},
		{"a repeated key is overwritten", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"` + stdioIDKey + `":"1","` + stdioIDKey + `":"0"}}}`, `2`},
		{"an escaped key is overwritten", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"agent-gateway\/stdio-request-id":"1"}}}`, `2`},
		{"repeated params collapse to the last", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"` + stdioIDKey + `":"1"}},"params":{}}`, `2`},
		{"a notification's key is removed", `{"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"` + stdioIDKey + `":"1"}}}`, ""},
		{"a null id's key is removed", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"_meta":{"` + stdioIDKey + `":"1"}}}`, ""},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, ""},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, ""},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`, ""},
		{"_meta not an object", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":5}}`, ""},
		{"carriage returns and tabs between members", "{\"jsonrpc\":\"2.0\",\r\"id\":4,\t\"method\":\"x\",\"params\":{}}", `4`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, refused := readFrames(t, tc.in+"\r\n")
			if refused != "" {
				t.Fatalf("refused: %s", refused)
			}
			line, ok := strings.CutSuffix(out, "\n")
			if !ok || strings.ContainsAny(line, "\r\n") {
				t.Fatalf("not one line: %q", out)
			}
			if !json.Valid([]byte(line)) {
				t.Fatalf("not JSON: %s", line)
			}
			id, ok := metaID(t, line)
			if ok != (tc.wantID != "") || id != tc.wantID {
				t.Fatalf("id %q (%v), want %q: %s", id, ok, tc.wantID, line)
			}
			if tc.wantID == "" && strings.Contains(line, "stdio-request-id") {
				t.Fatalf("the reserved key is left: %s", line)
			}
		})
	}

	t.Run("several lines, blank ones skipped, the last without a newline", func(t *testing.T) {
		in := `{"jsonrpc":"2.0","id":1,"method":"a","params":{}}` + "\n \t\r\n\n" +
			`{"jsonrpc":"2.0","id":"3","method":"c","params":{}}`
		out, refused := readFrames(t, in)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 || refused != "" {
			t.Fatalf("%d lines: %s (refused %s)", len(lines), out, refused)
		}
		if id, _ := metaID(t, lines[0]); id != "1" {
			t.Fatalf("line 1: %s", lines[0])
		}
		if id, _ := metaID(t, lines[1]); id != `"3"` {
			t.Fatalf("last line without newline: %s", lines[1])
		}
	})
	t.Run("HTML characters are not escaped", func(t *testing.T) {
		out, _ := readFrames(t, `{"jsonrpc":"2.0","id":"<&>","method":"x","params":{"a":"<&>"}}`+"\n")
		if strings.Contains(out, `\u003c`) || strings.Count(out, "<&>") != 3 {
			t.Fatalf("%s", out)
		}
	})
	t.Run("an over-long line is refused without being held", func(t *testing.T) {
		long := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", maxStdioLine) + `"}}`
		out, refused := readFrames(t, long+"\n"+`{"jsonrpc":"2.0","id":2,"method":"x","params":{}}`+"\n")
		if !strings.Contains(refused, `"code":"body_too_large"`) || strings.Count(refused, "\n") != 1 {
			t.Fatalf("refusal: %.300s", refused)
		}
		if id, _ := metaID(t, strings.TrimSuffix(out, "\n")); id != "2" {
			t.Fatalf("the line after it: %.200s", out)
		}
	})
	t.Run("a line of exactly the bound is read", func(t *testing.T) {
		head, tail := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"`, `"}}`
		line := head + strings.Repeat("a", maxStdioLine-len(head)-len(tail)) + tail
		out, refused := readFrames(t, line+"\r\n")
		if refused != "" {
			t.Fatalf("refused: %.300s", refused)
		}
		if id, _ := metaID(t, strings.TrimSuffix(out, "\n")); id != "1" {
			t.Fatalf("%.200s", out)
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
