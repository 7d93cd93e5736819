package middleware

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
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

// TestRedisCounterDownFailsClosed: an unreachable Redis refuses requests.
func TestRedisCounterDownFailsClosed(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	b := NewBudgets(redisTestPolicies{}, BudgetOptions{ReadPerWindow: 5, WritePerWindow: 5, Window: time.Minute,
		NewCounter: func(string) httprate.LimitCounter { return NewRedisCounter(c, "x:") }})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req = req.WithContext(WithRecord(req.Context(), &Record{}))
	b.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Fatal("request passed") })).ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("got %d Retry-After=%q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

type redisTestPolicies map[string]ToolPolicy

func (p redisTestPolicies) ToolPolicy(name string) (ToolPolicy, bool) {
	pol, ok := p[name]
	return pol, ok
}
