package middleware

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the per-request series. Every label value is bounded: routes
// are chi patterns, tools are toolset tool names (anything else is "unknown"),
// outcomes are stable codes.
type Metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	pages     *prometheus.CounterVec
	pageBytes *prometheus.CounterVec
	known     func(tool string) bool
}

// NewMetrics registers the request series on reg. known reports whether a
// tool name belongs to a toolset.
func NewMetrics(reg prometheus.Registerer, known func(tool string) bool) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_http_requests_total",
			Help: "HTTP requests by route pattern, status, MCP tool and outcome code.",
		}, []string{"route", "status", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agent_gateway_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and MCP tool.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "tool"}),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_pages_served_total",
			Help: "Pages served by paging tools (verified diff windows, document fragments), by tool.",
		}, []string{"tool"}),
		pageBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_page_bytes_total",
			Help: "Content bytes in the pages served (diff chunk bytes, document fragment bytes), by tool.",
		}, []string{"tool"}),
		known: known,
	}
	reg.MustRegister(m.requests, m.duration, m.pages, m.pageBytes)
	return m
}

// ZeroPages creates a paging tool's page series at zero, so a dashboard
// shows 0 before its first page rather than no data.
func (m *Metrics) ZeroPages(tool string) {
	m.pages.WithLabelValues(tool)
	m.pageBytes.WithLabelValues(tool)
}

// Handler counts and times each request once it is done.
func (m *Metrics) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw, ok := w.(*statusWriter)
		if !ok {
			sw = &statusWriter{ResponseWriter: w}
		}
		next.ServeHTTP(sw, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		rec := RecordFromContext(r.Context())
		tool := rec.Call().Tool
		if tool != "" && (m.known == nil || !m.known(tool)) {
			tool = "unknown"
		}
		outcome := rec.Outcome()
		if outcome == "" {
			outcome = "none"
		}
		m.requests.WithLabelValues(route, strconv.Itoa(sw.Status()), tool, outcome).Inc()
		m.duration.WithLabelValues(route, tool).Observe(time.Since(start).Seconds())
		if n, ok := rec.Page(); ok && outcome == "ok" {
			m.pages.WithLabelValues(tool).Inc()
			m.pageBytes.WithLabelValues(tool).Add(float64(n))
		}
	})
}
