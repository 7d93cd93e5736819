package middleware

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"
)

// redisClient connects to the test Redis at 127.0.0.1:6379 (or
// AGENT_GATEWAY_TEST_REDIS_URL); unreachable skips, except under CI=true.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("AGENT_GATEWAY_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is required in CI: %v", err)
		}
		t.Skipf("Redis unreachable: %v", err)
	}
	return c
}

// TestRedisCounterSharesBudgets: two limiters (two replicas) over one
// Redis spend one budget per key.
func TestRedisCounterSharesBudgets(t *testing.T) {
	c := redisClient(t)
	prefix := "agw-test:" + rand.Text() + ":"
	replica := func() *httprate.RateLimiter {
		return httprate.NewRateLimiter(3, time.Minute, httprate.WithLimitCounter(NewRedisCounter(c, prefix)))
	}
	a, b := replica(), replica()
	spend := func(l *httprate.RateLimiter, key string) bool {
		return !l.OnLimit(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil), key)
	}
	for i, l := range []*httprate.RateLimiter{a, b, a} {
		if !spend(l, "caller-1") {
			t.Fatalf("request %d refused within the budget", i)
		}
	}
	if spend(b, "caller-1") {
		t.Fatal("replica B accepted a request beyond the budget spent on A")
	}
	if !spend(b, "caller-2") {
		t.Fatal("another caller shares the spent budget")
	}
}

// TestRedisCounterDownFailsClosed: an unreachable Redis refuses requests
// as the budget store's fault (503 unavailable), and with a breaker only
// the first call waits on a dial: the next ones fail at once, without
// touching the network, until the cooldown lets one trial through.
func TestRedisCounterDownFailsClosed(t *testing.T) {
	var dials atomic.Int32
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1, DialerRetries: 1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}})
	defer c.Close()
	breaker := NewBreaker(time.Hour, nil)
	b := NewBudgets(redisTestPolicies{}, BudgetOptions{ReadPerWindow: 5, WritePerWindow: 5, Window: time.Minute,
		NewCounter: func(string) httprate.LimitCounter { return NewRedisCounter(c, "x:").WithBreaker(breaker) },
		Log:        slog.New(slog.DiscardHandler)})
	for i := range 3 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		req = req.WithContext(WithRecord(req.Context(), &Record{}))
		b.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Fatal("request passed") })).ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `"unavailable"`) {
			t.Fatalf("call %d: got %d Retry-After=%q %s", i, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials for 3 calls, want 1: the open breaker should spare the others", n)
	}
	if !breaker.Open() {
		t.Fatal("breaker closed after failures")
	}
}

type redisTestPolicies map[string]ToolPolicy

func (p redisTestPolicies) ToolPolicy(name string) (ToolPolicy, bool) {
	pol, ok := p[name]
	return pol, ok
}
