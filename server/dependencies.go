package server

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// breakerCooldown is how long a dependency that failed is answered
// unavailable at once before one call tries it again: short enough that
// callers are served within a second of its return, long enough that a
// dependency that is down costs one waiting call per cooldown instead of
// one per request.
const breakerCooldown = 500 * time.Millisecond

// The dependencies a breaker guards, as the breaker metric names them.
const (
	dependencyStore = "store"
	dependencyRedis = "redis"
)

// dependencyBreakers are the circuit breakers in front of the gateway's
// own dependencies, and the gauge that shows which are open.
type dependencyBreakers struct {
	store, redis *middleware.Breaker
	open         *prometheus.GaugeVec
}

func newDependencyBreakers(reg prometheus.Registerer) *dependencyBreakers {
	d := &dependencyBreakers{open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_gateway_dependency_breaker_open",
		Help: "1 while the circuit breaker in front of a dependency (store, redis) is open: calls are answered unavailable at once.",
	}, []string{"dependency"})}
	reg.MustRegister(d.open)
	breaker := func(name string) *middleware.Breaker {
		g := d.open.WithLabelValues(name)
		g.Set(0)
		return middleware.NewBreaker(breakerCooldown, func(open bool) {
			if open {
				g.Set(1)
			} else {
				g.Set(0)
			}
		})
	}
	d.store, d.redis = breaker(dependencyStore), breaker(dependencyRedis)
	return d
}

// writeProbeEvery bounds how often /readyz writes to the store: probes
// come from every load balancer and kubelet, and one write per replica
// every few seconds is enough to notice a full disk.
const writeProbeEvery = 5 * time.Second

// storeProbe is the store's readiness check: it answers (Ping) on every
// call and can write (ProbeWrite) at most every writeProbeEvery, the last
// write's outcome standing in between.
type storeProbe struct {
	ping, write func(context.Context) error
	now         func() time.Time

	mu       sync.Mutex
	lastAt   time.Time
	lastErr  error
	probedAt bool
}

func (p *storeProbe) check(ctx context.Context) error {
	if err := p.ping(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.probedAt && p.now().Sub(p.lastAt) < writeProbeEvery {
		return p.lastErr
	}
	p.lastErr, p.lastAt, p.probedAt = p.write(ctx), p.now(), true
	return p.lastErr
}

// poolCollector exports database/sql's pool figures, read at each scrape.
type poolCollector struct {
	stats                                     func() sql.DBStats
	open, inUse, idle, maxOpen, waits, waited *prometheus.Desc
}

func newPoolCollector(stats func() sql.DBStats) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("agent_gateway_store_pool_"+name, help, nil, nil)
	}
	return &poolCollector{stats: stats,
		open:    d("open_connections", "Connections to the store open now, in use or idle."),
		inUse:   d("in_use_connections", "Connections to the store in use now."),
		idle:    d("idle_connections", "Idle connections to the store."),
		maxOpen: d("max_open_connections", "The pool's bound on open connections (0: none)."),
		waits:   d("waits_total", "Store calls that waited for a free connection."),
		waited:  d("wait_seconds_total", "Time store calls spent waiting for a free connection."),
	}
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.inUse, c.idle, c.maxOpen, c.waits, c.waited} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.OpenConnections))
	ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(s.InUse))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(c.maxOpen, prometheus.GaugeValue, float64(s.MaxOpenConnections))
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.WaitCount))
	ch <- prometheus.MustNewConstMetric(c.waited, prometheus.CounterValue, s.WaitDuration.Seconds())
}
