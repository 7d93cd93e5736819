package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// nopCloser is a bytes.Buffer as the session's output.
type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

// TestStdioAnswersEveryRequestAtEOF: the whole input arrives and ends at
// once; calls that take their time (and a refused line) are all answered
// before RunStdio returns.
func TestStdioAnswersEveryRequestAtEOF(t *testing.T) {
	c := New("test", "v0", "", Tool{Name: "slow", Description: "Answers after a while.",
		Schema: map[string]any{"type": "object"},
		Handle: func(ctx context.Context, _ json.RawMessage) (any, error) {
			select {
			case <-time.After(200 * time.Millisecond):
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}})
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}` + "\n" +
		"not json\n" +
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"slow","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}` // no newline before the end
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := RunStdio(ctx, c.Server(nil, nil), strings.NewReader(in), nopCloser{&out}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var a stdioAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if a.Error != nil && string(a.ID) != "null" {
			t.Fatalf("an error: %s", line)
		}
		ids[string(a.ID)] = true
	}
	for _, id := range []string{"0", "1", `"two"`, "3", "null"} {
		if !ids[id] {
			t.Fatalf("no answer with id %s; output:\n%s", id, out.String())
		}
	}
}

// TestPendingAnswersWait: the end of the input waits for the unanswered
// requests only, and never past an answer count of zero, a release, the
// end of the context or the limit.
func TestPendingAnswersWait(t *testing.T) {
	waits := func(p *pendingAnswers) chan struct{} {
		done := make(chan struct{})
		go func() { p.wait(); close(done) }()
		return done
	}
	returns := func(t *testing.T, done chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("wait did not return")
		}
	}
	blocks := func(t *testing.T, done chan struct{}) {
		t.Helper()
		select {
		case <-done:
			t.Fatal("wait returned with a request unanswered")
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Run("nothing pending", func(t *testing.T) {
		returns(t, waits(newPendingAnswers(context.Background(), time.Hour)))
	})
	t.Run("the last answer", func(t *testing.T) {
		p := newPendingAnswers(context.Background(), time.Hour)
		p.add()
		p.add()
		done := waits(p)
		blocks(t, done)
		p.answered()
		blocks(t, done)
		p.answered()
		returns(t, done)
	})
	t.Run("an answer to nothing pending counts nothing", func(t *testing.T) {
		p := newPendingAnswers(context.Background(), time.Hour)
		p.answered()
		p.add()
		blocks(t, waits(p))
	})
	t.Run("release", func(t *testing.T) {
		p := newPendingAnswers(context.Background(), time.Hour)
		p.add()
		done := waits(p)
		blocks(t, done)
		p.release()
		p.release()
		returns(t, done)
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := newPendingAnswers(ctx, time.Hour)
		p.add()
		done := waits(p)
		blocks(t, done)
		cancel()
		returns(t, done)
	})
	t.Run("limit", func(t *testing.T) {
		p := newPendingAnswers(context.Background(), 100*time.Millisecond)
		p.add()
		returns(t, waits(p))
	})
}

func TestIsAnswer(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":4,"method":"roots/list"}`, false},
		{`not json`, false},
	} {
		if got := isAnswer([]byte(tc.msg)); got != tc.want {
			t.Errorf("isAnswer(%s) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}
