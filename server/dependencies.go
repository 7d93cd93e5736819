package server

import (
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
