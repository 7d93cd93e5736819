package server

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/handlers/forgejotools"
)

// verifiedVolume is the per-caller account of diff bytes verified
// (ratelimit.verified_bytes_per_minute), exported as
// agent_gateway_diff_verified_bytes_top: the forgejotools.VolumeTopN
// callers with the most bytes verified in the last complete minute,
// labelled with the hashed caller key the access log writes. Only the top
// callers are exported, so the series stay bounded however many
// principals there are; the total is agent_gateway_evidence_verified_bytes_total.
func (g *Gateway) verifiedVolume() *forgejotools.VerifiedVolume {
	v := forgejotools.NewVerifiedVolume(g.cfg.VerifiedBytesPerMinute)
	g.registry.MustRegister(volumeCollector{v})
	return v
}

var volumeDesc = prometheus.NewDesc("agent_gateway_diff_verified_bytes_top",
	"Diff bytes verified in the last complete minute for each of the callers with the most (at most 10), by hashed caller key.",
	[]string{"caller"}, nil)

type volumeCollector struct{ v *forgejotools.VerifiedVolume }

func (c volumeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- volumeDesc }

func (c volumeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.v.Top() {
		ch <- prometheus.MustNewConstMetric(volumeDesc, prometheus.GaugeValue, float64(t.Bytes), t.Caller)
	}
}

// parseNonNegative reads a whole number of at least 0.
func parseNonNegative(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a whole number, 0 or more")
	}
	return n, nil
}

func formatInt64(n int64) string { return strconv.FormatInt(n, 10) }
