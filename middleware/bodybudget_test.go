package middleware

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// TestBodyBudgetDeclared: a declared length over the route's cap (or the
// IP's share) is 413 before anything is reserved; within it, nothing is
// reserved until bytes are read, and then what was read: an IP past its
// share is 429, past the gateway's bound 503; reservations end with the
// handler.
func TestBodyBudgetDeclared(t *testing.T) {
	b := NewBodyBudget(BodyBudgetOptions{Max: 100, MaxPerIP: 60, RouteCap: func(r *http.Request) int64 {
		if strings.HasPrefix(r.URL.Path, "/oauth/") {
			return 20
		}
		return 1000
	}})
	send := func(ip, path string, n int, next http.Handler) *httptest.ResponseRecorder {
		r, rec := newReq(http.MethodPost, path, strings.NewReader(strings.Repeat("x", n)))
		setFrom(rec, ip)
		w := httptest.NewRecorder()
		b.Handler(next).ServeHTTP(w, r)
		return w
	}
	var before, during int64
	if w := send("192.0.2.1", "/mcp", 60, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		before = b.Buffered()
		_, _ = io.Copy(io.Discard, r.Body)
		during = b.Buffered()
	})); w.Code != http.StatusOK || before != 0 || during != 60 {
		t.Fatalf("at the share: %d, %d reserved before reading, %d after", w.Code, before, during)
	}
	if b.Buffered() != 0 {
		t.Fatalf("reservation outlived the handler: %d", b.Buffered())
	}
	for _, c := range []struct {
		path string
		n    int
		want int
	}{
		{"/oauth/token", 20, http.StatusOK},
		{"/oauth/token", 21, http.StatusRequestEntityTooLarge}, // over the route's cap
		{"/mcp", 61, http.StatusRequestEntityTooLarge},         // over the IP's share
	} {
		next := http.Handler(ok)
		if c.want != http.StatusOK {
			next = mustNotRun(t)
		}
		if w := send("192.0.2.1", c.path, c.n, next); w.Code != c.want {
			t.Errorf("%d bytes to %s: %d, want %d", c.n, c.path, w.Code, c.want)
		}
	}
	// Nested, each reading its body first: A holds 50, then A reads 11 more
	// (429), B holds 50, C reads 1 (503).
	inner := func(ip string, n, want int, then http.Handler) http.Handler {
		return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if then == nil {
				then = ok
			}
			body := then
			if want != http.StatusOK {
				body = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if _, err := io.ReadAll(r.Body); bodyBudgetRefusal(err) != nil {
						Refuse(w, r, bodyBudgetRefusal(err))
					}
				})
			}
			if w := send(ip, "/mcp", n, body); w.Code != want {
				t.Errorf("%s reading %d: %d, want %d (%s)", ip, n, w.Code, want, w.Body.String())
			}
		})
	}
	send("192.0.2.1", "/mcp", 50, inner("192.0.2.1", 11, http.StatusTooManyRequests, nil))
	send("192.0.2.1", "/mcp", 50, inner("192.0.2.2", 50, http.StatusOK, inner("192.0.2.3", 1, http.StatusServiceUnavailable, nil)))
	if b.Buffered() != 0 {
		t.Fatalf("%d bytes still reserved", b.Buffered())
	}
}

// TestBodyBudgetIPv6Prefix: bodies from different addresses of one /64
// share the address's share of body bytes; the next /64 has its own.
func TestBodyBudgetIPv6Prefix(t *testing.T) {
	b := NewBodyBudget(BodyBudgetOptions{Max: 1000, MaxPerIP: 60})
	send := func(ip string, n int, next http.Handler) int {
		r, rec := newReq(http.MethodPost, "/mcp", strings.NewReader(strings.Repeat("x", n)))
		setFrom(rec, ip)
		w := httptest.NewRecorder()
		b.Handler(next).ServeHTTP(w, r)
		return w.Code
	}
	readThen429 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); bodyBudgetRefusal(err) != nil {
			Refuse(w, r, bodyBudgetRefusal(err))
		}
	})
	send("2001:db8:1:2::1", 50, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if code := send("2001:db8:1:2:ffff::2", 11, readThen429); code != http.StatusTooManyRequests {
			t.Errorf("another address of the /64 past the share: %d, want 429", code)
		}
		if code := send("2001:db8:1:3::1", 11, ok); code != http.StatusOK {
			t.Errorf("the next /64: %d, want 200", code)
		}
	}))
}

// TestBodyBudgetUnknownLength: a chunked body reserves as it is read; when
// the budget runs out its reader fails with a BodyBudgetError, which the
// MCP peek answers 429 (the IP's share) with Retry-After.
func TestBodyBudgetUnknownLength(t *testing.T) {
	b := NewBodyBudget(BodyBudgetOptions{Max: 1 << 20, MaxPerIP: 3 * bodyStep})
	chunked := func(n int) *http.Request {
		r, rec := newReq(http.MethodPost, "/mcp", iotest.HalfReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+strings.Repeat(" ", n))))
		r.ContentLength = -1
		setFrom(rec, "192.0.2.1")
		return r
	}
	w := httptest.NewRecorder()
	b.Handler(MCPPeek(ok)).ServeHTTP(w, chunked(3*bodyStep-100))
	if w.Code != http.StatusOK {
		t.Fatalf("within the share: %d %s", w.Code, w.Body.String())
	}
	w = httptest.NewRecorder()
	b.Handler(MCPPeek(mustNotRun(t))).ServeHTTP(w, chunked(3*bodyStep+1))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("over the share: %d %s", w.Code, w.Body.String())
	}
	if e := errorBody(t, w.Body.String()); e["bound"] != "body_budget_per_ip" || e["code"] != "rate_limited" {
		t.Fatalf("error %v", e)
	}
	if b.Buffered() != 0 {
		t.Fatalf("%d bytes still reserved", b.Buffered())
	}
	// The reader keeps failing once the budget refused it.
	r := chunked(4 * bodyStep)
	var readErr error
	b.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, readErr = io.ReadAll(r.Body)
		_, again := r.Body.Read(make([]byte, 1))
		var be *BodyBudgetError
		if !errors.As(again, &be) {
			t.Errorf("second read: %v", again)
		}
	})).ServeHTTP(httptest.NewRecorder(), r)
	var be *BodyBudgetError
	if !errors.As(readErr, &be) || be.Bound != BoundPerIP {
		t.Fatalf("read error %v", readErr)
	}
}
