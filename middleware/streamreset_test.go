package middleware

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestResetGuard: an HTTP/2 connection may reset up to the allowance more
// streams than it completes; one more closes it, once. HTTP/1 requests
// and requests without a ledger are not counted.
func TestResetGuard(t *testing.T) {
	const allowance = 3
	run := func(t *testing.T, completed, resets int, proto int) (closedCalls int, connClosed bool) {
		t.Helper()
		client, server := net.Pipe()
		defer client.Close()
		ctx := WithStreamLedger(context.Background(), server)
		resetsSeen := 0
		h := ResetGuard(ResetGuardOptions{Allowance: allowance, Reset: func() { resetsSeen++ },
			Closed: func(*http.Request, int, int) { closedCalls++ }})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		serve := func(reset bool) {
			rctx, cancel := context.WithCancel(ctx)
			if reset {
				cancel()
			}
			defer cancel()
			r := httptest.NewRequest(http.MethodPost, "/mcp/forgejo", nil).WithContext(rctx)
			r.ProtoMajor = proto
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
		for range completed {
			serve(false)
		}
		for range resets {
			serve(true)
		}
		if proto == 2 && resetsSeen != resets {
			t.Fatalf("%d resets counted, want %d", resetsSeen, resets)
		}
		// No one reads the pipe: a write times out on an open one and
		// fails at once on a closed one.
		_ = server.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := server.Write([]byte{0})
		return closedCalls, errors.Is(err, io.ErrClosedPipe)
	}
	cases := []struct {
		name              string
		completed, resets int
		proto             int
		closed            bool
	}{
		{"within the allowance", 0, allowance, 2, false},
		{"one past the allowance", 0, allowance + 1, 2, true},
		{"completions earn resets", 10, 10 + allowance, 2, false},
		{"past completions plus the allowance", 10, 11 + allowance, 2, true},
		{"many past: closed once", 0, 50, 2, true},
		{"HTTP/1 is not counted", 0, 50, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls, closed := run(t, c.completed, c.resets, c.proto)
			if closed != c.closed || (c.closed && calls != 1) || (!c.closed && calls != 0) {
				t.Fatalf("closed %v after %d Closed calls, want closed %v (once)", closed, calls, c.closed)
			}
		})
	}
}
