package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// openRedis connects the shared budget store. A Redis that cannot be
// reached at start fails the start: running with silently per-replica
// budgets would multiply every caller's budget by the replica count.
func (g *Gateway) openRedis(ctx context.Context) error {
	setRedisLogger.Do(func() { redis.SetLogger(redisLog{g.log}) })
	opts, err := redis.ParseURL(g.cfg.RedisURL)
	if err != nil {
		// Not wrapped: the parse error quotes the URL, password and all.
		return fmt.Errorf("ratelimit.redis_url: not a valid Redis URL: %s", redactRedisError(g.cfg.RedisURL, err))
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 2*time.Second, time.Second, time.Second
	// One dial per attempt and one retry per command (a pooled connection
	// Redis closed on restart): a Redis that is down costs a call one
	// failed dial, not five, and the breaker (g.breakers.redis) spares the
	// calls after it even that.
	opts.DialerRetries, opts.MaxRetries = 1, 1
	c := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return fmt.Errorf("ratelimit.redis_url: cannot reach Redis: %w", err)
	}
	g.redis = c
	g.closers = append(g.closers, c.Close)
	g.ready = append(g.ready, readinessCheck{name: "redis", check: func(ctx context.Context) error { return c.Ping(ctx).Err() }})
	return nil
}

// budgetOptions are the per-caller budgets of one MCP endpoint; with Redis
// configured, every replica spends from the same counters.
func (g *Gateway) budgetOptions(endpoint string) middleware.BudgetOptions {
	o := middleware.BudgetOptions{
		ReadPerWindow: g.cfg.ReadPerMinute, WritePerWindow: g.cfg.WritePerMinute, IPCeilingPerWindow: g.cfg.IPCeilingPerMinute,
		RefusedBearersPerWindow: g.cfg.RefusedBearersPerMinute,
		Window:                  time.Minute,
		// Dispatches store workflows kept for days: an hourly bound.
		DispatchPerWindow: g.cfg.DispatchesPerHour, DispatchWindow: time.Hour,
		Rejected: func(budget string) { g.budgetRejections.WithLabelValues(endpoint, budget).Inc() },
		Log:      g.log,
	}
	if g.redis != nil {
		o.NewCounter = func(budget string) httprate.LimitCounter {
			return middleware.NewRedisCounter(g.redis, fmt.Sprintf("%sbudget:%s:%s:", g.cfg.BudgetKeyPrefix(), endpoint, budget)).WithBreaker(g.breakers.redis)
		}
	}
	return o
}

// BudgetKeyPrefix starts every key the gateway keeps in Redis:
// ratelimit.key_prefix when set, else "agw:" and a hash of public_url.
// The replicas of one deployment share their public URL, so they spend
// from one budget, while another deployment on the same Redis database
// (a staging gateway, a test) has another URL and so budgets of its own.
func (c Config) BudgetKeyPrefix() string {
	if c.RedisKeyPrefix != "" {
		return c.RedisKeyPrefix
	}
	sum := sha256.Sum256([]byte(c.PublicURL))
	return "agw:" + hex.EncodeToString(sum[:6]) + ":"
}
