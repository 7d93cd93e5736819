package toolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/fuzzseed"
)

// frameSeeds are the committed corpus of FuzzFrameReader: the ways a
// client could try to make the frame reader and the SDK see different
// messages.
func frameSeeds() []fuzzseed.Seed {
	evil := `"params":{"name":"x","_meta":{"` + stdioIDKey + `":"\"smuggled\""}}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call",`
	var seeds []fuzzseed.Seed
	for name, in := range map[string]string{
		"split-between-members":  call + "\n" + evil + "}\n",
		"split-in-whitespace":    "{\n" + call[1:] + evil + "}\n",
		"two-on-a-line-cr":       `{"jsonrpc":"2.0","method":"n"}` + "\r" + call + evil + "}\n",
		"two-on-a-line-space":    `{"jsonrpc":"2.0","method":"n"} ` + call + evil + "}\n",
		"two-on-a-line-adjacent": `{"jsonrpc":"2.0","method":"n"}` + call + evil + "}",
		"batch":                  "[" + call + evil + "}]\n",
		"notification-with-key":  `{"jsonrpc":"2.0","method":"tools/call",` + evil + "}\n",
		"repeated-params":        call + evil + `,"params":{"name":"x"}}` + "\n",
		"repeated-meta":          call + `"params":{"_meta":{"` + stdioIDKey + `":"1"},"_meta":{}}}` + "\n",
		"escaped-key":            call + `"params":{"_meta":{"agent-gateway\/stdio-request-id":"\"s\""}}}` + "\n",
		"case-variant-meta":      call + `"params":{"_META":{"` + stdioIDKey + `":"\"s\""}}}` + "\n",
		"string-in-string-id":    `{"jsonrpc":"2.0","id":"a\"\n\u2028<","method":"tools/call","params":{}}` + "\r\n",
		"unterminated-last-line": call + evil,
		"blank-lines":            "\n\r\n \t\n" + call + evil + "}",
		"not-json":               "hello\n" + call + evil + "}\n",
		"invalid-utf8-id":        `{"jsonrpc":"2.0","id":"` + "\xf1" + `","method":"tools/call","params":{}}` + "\n",
		"nul-and-invalid-utf8":   call + `"params":{"_meta":{"` + stdioIDKey + "\xff" + `":"1"}}}` + "\n\x00\n",
	} {
		seeds = append(seeds, fuzzseed.Seed{Name: name, Values: []any{[]byte(in)}})
	}
	return seeds
}

func TestFrameFuzzSeeds(t *testing.T) { fuzzseed.Sync(t, "FuzzFrameReader", frameSeeds()) }

// FuzzFrameReader: whatever a client writes, the SDK's decoder (a
// json.Decoder over the stream, as in its IOTransport) reads exactly the
// lines the frame reader emitted, each one JSON object; the reserved id
// member appears only in a request, holding that request's own id; every
// input line it did not pass on was answered with one refusal.
func FuzzFrameReader(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s.Values[0].([]byte))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var refused bytes.Buffer
		out, err := io.ReadAll(newFrameReader(bytes.NewReader(in), &refused))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(out), "\n")
		if last := lines[len(lines)-1]; last != "" {
			t.Fatalf("output does not end in a newline: %q", last)
		}
		lines = lines[:len(lines)-1]
		dec := json.NewDecoder(bytes.NewReader(out))
		for i, line := range lines {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatalf("the SDK's decoder fails on line %d: %v: %q", i, err, line)
			}
			if string(raw)+"\n" != line {
				t.Fatalf("the SDK's decoder reads %q, the reader emitted %q", raw, line)
			}
			checkReservedID(t, raw)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			t.Fatalf("the SDK's decoder reads past the emitted lines: %v", err)
		}
		inLines := 0
		for _, l := range strings.SplitAfter(string(in), "\n") {
			if strings.Trim(l, jsonSpace) != "" {
				inLines++
			}
		}
		if got := len(lines) + strings.Count(refused.String(), "\n"); got != inLines {
			t.Fatalf("%d input lines, %d passed and %d refused", inLines, len(lines), strings.Count(refused.String(), "\n"))
		}
	})
}

// checkReservedID fails unless msg holds stdioIDKey only as a request's
// own id. Members are matched exactly, as the SDK matches them.
func checkReservedID(t *testing.T, msg json.RawMessage) {
	t.Helper()
	var m, p, meta map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("%v: %s", err, msg)
	}
	if json.Unmarshal(m["params"], &p) != nil || p == nil {
		return
	}
	id, hasID := m["id"]
	_, hasMethod := m["method"]
	request := hasMethod && hasID && string(id) != "null"
	_, hasMeta := p["_meta"]
	if json.Unmarshal(p["_meta"], &meta) != nil && hasMeta {
		return
	}
	raw, ok := meta[stdioIDKey]
	if !ok {
		if request {
			t.Fatalf("a request without its id: %s", msg)
		}
		return
	}
	var got string
	if !request || json.Unmarshal(raw, &got) != nil {
		t.Fatalf("the reserved member outside a request: %s", msg)
	}
	if got != string(id) {
		t.Fatalf("the reserved member holds %q, the request's id is %s", got, id)
	}
}
