package server

import (
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// upstreamMetrics counts and times exchanges with each fixed origin. Labels
// are bounded: the upstream name, the method, the status class and the
// transport failure kind.
type upstreamMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newUpstreamMetrics(reg prometheus.Registerer) *upstreamMetrics {
	m := &upstreamMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_upstream_requests_total",
			Help: "Requests to an upstream origin by upstream, method, status class and failure kind.",
		}, []string{"upstream", "method", "status_class", "failure"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agent_gateway_upstream_response_header_seconds",
			Help:    "Time until an upstream's response headers arrived (or the exchange failed).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"upstream"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// ObserveUpstream implements upstream.Observer.
func (m *upstreamMetrics) ObserveUpstream(name, method string, status int, kind upstream.Kind, elapsed time.Duration) {
	class := "none"
	if status > 0 {
		class = strconv.Itoa(status/100) + "xx"
	}
	failure := "none"
	if kind != 0 {
		failure = kind.String()
	}
	m.requests.WithLabelValues(name, method, class, failure).Inc()
	m.duration.WithLabelValues(name).Observe(elapsed.Seconds())
}

// zero creates an upstream's usual series (GET, 2xx, no failure) and its
// latency histogram at zero (zeroKnownSeries).
func (m *upstreamMetrics) zero(name string) {
	m.requests.WithLabelValues(name, "GET", "2xx", "none")
	m.duration.WithLabelValues(name)
}

// buildInfo is the constant agent_gateway_build_info{version, go_version} 1.
func buildInfo() prometheus.Collector {
	goVersion := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "agent_gateway_build_info",
		Help:        "Build information; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": Version, "go_version": goVersion},
	})
	g.Set(1)
	return g
}

// domainMetrics are the series of what the gateway verifies and mints:
// evidence entities and the diff bytes they proved, and GitHub installation
// tokens (mints versus cache hits).
type domainMetrics struct {
	evidenceEntities *prometheus.CounterVec
	evidenceBytes    prometheus.Counter
	installTokens    *prometheus.CounterVec
}

func newDomainMetrics(reg prometheus.Registerer) *domainMetrics {
	m := &domainMetrics{
		evidenceEntities: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_evidence_entities_total",
			Help: "PR diff evidence entities read, by result: verified, or the refusal code.",
		}, []string{"result"}),
		evidenceBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agent_gateway_evidence_verified_bytes_total",
			Help: "Decoded diff bytes whose count and SHA-256 were verified (whole diffs, every page).",
		}),
		installTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_github_installation_tokens_total",
			Help: "GitHub App installation token requests, by event: cache_hit, minted, mint_failed.",
		}, []string{"event"}),
	}
	reg.MustRegister(m.evidenceEntities, m.evidenceBytes, m.installTokens)
	return m
}

// evidence implements the forgejo client's evidence observer.
func (m *domainMetrics) evidence(verified int64, err error) {
	if err != nil {
		m.evidenceEntities.WithLabelValues(string(toolerr.As(err).Code)).Inc()
		return
	}
	m.evidenceEntities.WithLabelValues("verified").Inc()
	m.evidenceBytes.Add(float64(verified))
}
