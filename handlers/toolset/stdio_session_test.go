package toolset

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// stdioPeer is a client of RunStdio over pipes: it writes raw bytes and
// reads the gateway's answers line by line.
type stdioPeer struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
}

// startStdioPeer serves a toolset whose one tool, call_id, answers the
// request id its call carried to it (the stdio page fitter's input).
func startStdioPeer(t *testing.T) *stdioPeer {
	t.Helper()
	c := New("test", "v0", "", Tool{Name: "call_id", Description: "Answers the call's recorded id.",
		Schema: map[string]any{"type": "object"},
		Handle: func(ctx context.Context, _ json.RawMessage) (any, error) {
			return string(middleware.RecordFromContext(ctx).Call().ID), nil
		}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunStdio(ctx, c.Server(nil, nil), inR, outW) }()
	p := &stdioPeer{t: t, in: inW, lines: make(chan string, 16)}
	go func() {
		br := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				p.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		<-done
		outR.Close()
	})
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	p.receive()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n")
	return p
}

func (p *stdioPeer) send(raw string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, raw); err != nil {
		p.t.Fatal(err)
	}
}

// stdioAnswer is one line the gateway wrote: a result or a JSON-RPC error.
type stdioAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
		Data struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
}

func (p *stdioPeer) receive() stdioAnswer {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the gateway closed stdout: the session ended")
		}
		var a stdioAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			p.t.Fatalf("%v: %.300s", err, line)
		}
		return a
	case <-time.After(time.Minute):
		p.t.Fatal("no answer within a minute")
	}
	return stdioAnswer{}
}

// callID calls call_id with id and returns the id the tool saw.
func (p *stdioPeer) callID(id string) string {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"call_id","arguments":{}}}` + "\n")
	a := p.receive()
	if a.Result == nil || len(a.Result.Content) != 1 || string(a.ID) != id {
		p.t.Fatalf("call %s: %+v", id, a)
	}
	var seen string
	_ = json.Unmarshal([]byte(a.Result.Content[0].Text), &seen)
	return seen
}

// TestStdioFraming: a line that is not one complete JSON object is
// answered with a JSON-RPC error and never reaches the SDK, so a message
// split over lines (or two on one line) cannot carry a reserved _meta id
// past the reader; the session goes on.
func TestStdioFraming(t *testing.T) {
	evil := `"params":{"name":"call_id","arguments":{},"_meta":{"` + stdioIDKey + `":"\"smuggled\""}}`
	cases := []struct {
		name  string
		lines string
		want  []string // the data codes of the errors, one per refused line
	}{
		{"split between members", `{"jsonrpc":"2.0","id":1,"method":"tools/call",` + "\n" + evil + "}\n", []string{"parse_error", "parse_error"}},
		{"split inside whitespace", "{\n" + `"jsonrpc":"2.0","id":1,"method":"tools/call",` + evil + "}\n", []string{"parse_error", "parse_error"}},
		{"split after the opening brace of params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + "\n" + evil[len(`"params":`):] + "}\n", []string{"parse_error", "parse_error"}},
		{"two messages split by a carriage return", `{"jsonrpc":"2.0","method":"notifications/x"}` + "\r" + `{"jsonrpc":"2.0","id":1,"method":"tools/call",` + evil + "}\n", []string{"parse_error"}},
		{"two messages split by a space", `{"jsonrpc":"2.0","method":"notifications/x"} {"jsonrpc":"2.0","id":1,"method":"tools/call",` + evil + "}\n", []string{"parse_error"}},
		{"not JSON", "hello\n", []string{"parse_error"}},
		{"not UTF-8", `{"jsonrpc":"2.0","id":"` + "\xff" + `","method":"tools/call","params":{"name":"call_id"}}` + "\n", []string{"parse_error"}},
		{"a JSON value that is not an object", "5\n", []string{"invalid_request"}},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call",` + evil + "}]\n", []string{"invalid_request"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := startStdioPeer(t)
			p.send(tc.lines)
			for i, want := range tc.want {
				a := p.receive()
				if a.Result != nil && len(a.Result.Content) == 1 {
					t.Fatalf("answer %d: the SDK ran the call, whose tool saw the id %s; want a %s error", i, a.Result.Content[0].Text, want)
				}
				if a.Error == nil || a.Error.Data.Code != want || string(a.ID) != "null" {
					t.Fatalf("answer %d: %+v, want a %s error with id null", i, a, want)
				}
				if wantRPC := map[string]int{"parse_error": -32700, "invalid_request": -32600}[want]; a.Error.Code != wantRPC {
					t.Fatalf("answer %d: JSON-RPC code %d, want %d", i, a.Error.Code, wantRPC)
				}
			}
			if got := p.callID("2"); got != "2" {
				t.Fatalf("the next call saw id %q", got)
			}
		})
	}
	t.Run("a blank line is no message", func(t *testing.T) {
		p := startStdioPeer(t)
		p.send(" \t\r\n\n")
		if got := p.callID(`"s"`); got != `"s"` {
			t.Fatalf("the call saw id %q", got)
		}
	})
	t.Run("a client's own id member is replaced", func(t *testing.T) {
		p := startStdioPeer(t)
		p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call",` + evil + "}\n")
		a := p.receive()
		if a.Result == nil || a.Result.Content[0].Text != `"3"` {
			t.Fatalf("%+v", a)
		}
	})
}
