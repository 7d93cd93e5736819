package middleware

import (
	"context"
	"strconv"
	"time"

	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"
)

// RedisCounter is an httprate.LimitCounter kept in Redis, so that every
// replica spends from one budget per caller. It stores one integer per
// caller key and window, expiring after two windows (httprate's sliding
// estimate reads the current and the previous one).
//
// httprate's own Redis counter module is not available from the module
// proxy here, so this small adapter over go-redis is ours. Like that module,
// it checks and increments in two steps, so concurrent replicas can overshoot
// a budget by at most one request each at the boundary.
type RedisCounter struct {
	client  redis.UniversalClient
	prefix  string
	window  time.Duration
	timeout time.Duration
	breaker *Breaker // nil: every call dials
}

var _ httprate.LimitCounter = (*RedisCounter)(nil)

// NewRedisCounter returns a counter whose keys start with prefix (one per
// endpoint and budget; the server uses "agw:budget:<endpoint>:<budget>:").
func NewRedisCounter(client redis.UniversalClient, prefix string) *RedisCounter {
	return &RedisCounter{client: client, prefix: prefix, timeout: time.Second}
}

// WithBreaker makes c fail at once, without a dial, while b is open: one
// breaker per Redis, shared by every counter on it, so a Redis that is
// down costs one waiting call per cooldown instead of one per request.
func (c *RedisCounter) WithBreaker(b *Breaker) *RedisCounter {
	c.breaker = b
	return c
}

// Config implements httprate.LimitCounter.
func (c *RedisCounter) Config(_ int, windowLength time.Duration) { c.window = windowLength }

// Increment implements httprate.LimitCounter.
func (c *RedisCounter) Increment(key string, currentWindow time.Time) error {
	return c.IncrementBy(key, currentWindow, 1)
}

// IncrementBy implements httprate.LimitCounter.
func (c *RedisCounter) IncrementBy(key string, currentWindow time.Time, amount int) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	k := c.key(key, currentWindow)
	return c.breaker.Do(func() error {
		_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.IncrBy(ctx, k, int64(amount))
			p.Expire(ctx, k, 2*c.window+time.Second)
			return nil
		})
		return err
	}, nil)
}

// Get implements httprate.LimitCounter.
func (c *RedisCounter) Get(key string, currentWindow, previousWindow time.Time) (int, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var vals []any
	err := c.breaker.Do(func() (err error) {
		vals, err = c.client.MGet(ctx, c.key(key, currentWindow), c.key(key, previousWindow)).Result()
		return err
	}, nil)
	if err != nil {
		return 0, 0, err
	}
	return toInt(vals[0]), toInt(vals[1]), nil
}

func (c *RedisCounter) key(key string, window time.Time) string {
	return c.prefix + key + ":" + strconv.FormatInt(window.Unix(), 10)
}

func toInt(v any) int {
	s, ok := v.(string)
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(s)
	return n
}
