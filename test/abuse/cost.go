package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// phaseCost is what one phase cost the machine, to tell a p99 raised by
// the attack inside the gateway from one raised by a busy machine: the CPU
// time the gateway process, the upstreams process (the emulators) and this
// process (attackers, legitimate callers) used during the phase, the
// machine's load average at its end, and the gateway's own time for each
// legitimate call (the access log's duration: from the request's headers
// read to its response written, upstream calls included).
type phaseCost struct {
	wall                                 time.Duration
	gatewayCPU, upstreamsCPU, harnessCPU time.Duration
	load                                 string
	server                               []time.Duration
	// upstream are the emulators' own times for the requests the gateway
	// made of them during the phase (the attackers' requests never reach
	// an upstream, so these are the legitimate calls'): beside server, they
	// tell a slow upstream from a slow gateway.
	upstream []time.Duration
	// gcCycles are the gateway's garbage collections during the phase;
	// goroutines its goroutines at the end.
	gcCycles, goroutines float64
	// peakHeap is the largest heap in use seen (go_memstats_heap_inuse_bytes,
	// sampled every 250 ms) and limitAtPeak the soft memory limit then
	// (go_gc_gomemlimit_bytes).
	peakHeap, limitAtPeak float64
}

// costMeter is a phase's cost being measured.
type costMeter struct {
	s                                    *stack
	start                                time.Time
	gatewayCPU, upstreamsCPU, harnessCPU time.Duration
	logOffset                            int64
	upstreamFrom                         int
	gcCycles                             float64
	stopSampling                         func()
	peakHeap, limitAtPeak                float64
}

func (s *stack) meterCost() *costMeter {
	m := &costMeter{s: s, start: time.Now(), gatewayCPU: gatewaytest.ProcessCPU(s.cmd.Process.Pid), harnessCPU: gatewaytest.ProcessCPU(os.Getpid()), logOffset: s.logBytes(), upstreamFrom: s.up.servedCount(), upstreamsCPU: gatewaytest.ProcessCPU(s.up.pid()),
		gcCycles: s.metric("go_gc_duration_seconds_count")}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			v := s.metrics("go_memstats_heap_inuse_bytes", "go_gc_gomemlimit_bytes")
			if v[0] > m.peakHeap {
				m.peakHeap, m.limitAtPeak = v[0], v[1]
			}
		}
	}()
	m.stopSampling = func() { close(stop); <-done }
	return m
}

// done ends the measure.
func (m *costMeter) done() phaseCost {
	m.stopSampling()
	c := phaseCost{peakHeap: m.peakHeap, limitAtPeak: m.limitAtPeak, wall: time.Since(m.start), gatewayCPU: gatewaytest.ProcessCPU(m.s.cmd.Process.Pid) - m.gatewayCPU, harnessCPU: gatewaytest.ProcessCPU(os.Getpid()) - m.harnessCPU,
		upstreamsCPU: gatewaytest.ProcessCPU(m.s.up.pid()) - m.upstreamsCPU}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		c.load = strings.Join(strings.Fields(string(b))[:1], "")
	}
	c.server = m.s.legitServerTimes(m.logOffset)
	c.upstream = m.s.up.servedSince(m.upstreamFrom)
	c.gcCycles = m.s.metric("go_gc_duration_seconds_count") - m.gcCycles
	c.goroutines = m.s.metric("go_goroutines")
	return c
}

// legitServerTimes are the durations the gateway logged, from offset on,
// for the legitimate callers' requests (client 127.0.0.1; the attackers
// use other addresses).
func (s *stack) legitServerTimes(offset int64) []time.Duration {
	f, err := os.Open(s.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	var out []time.Duration
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			ClientIP string `json:"client_ip"`
			Path     string `json:"path"`
			Duration int64  `json:"duration"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.ClientIP != "127.0.0.1" || line.Duration == 0 {
			continue
		}
		if strings.HasPrefix(line.Path, "/mcp/") || line.Path == "/oauth/token" {
			out = append(out, time.Duration(line.Duration))
		}
	}
	return out
}

// String is the cost in one line.
func (c phaseCost) String() string {
	share := func(d time.Duration) string {
		return fmt.Sprintf("%.1f s (%.0f%% of one CPU)", d.Seconds(), 100*d.Seconds()/c.wall.Seconds())
	}
	return fmt.Sprintf("gateway p99 %s over %d calls, its upstreams' own p99 %s over %d requests (a call's mean: %s in the gateway, %s of it in upstreams); CPU: gateway %s, upstreams process %s, attackers+callers %s; gateway GC cycles %.0f, peak heap in use %.1f MiB (soft limit then %.1f MiB), goroutines at the end %.0f; load average %s",
		ms(p99Of(c.server)), len(c.server), ms(p99Of(c.upstream)), len(c.upstream), ms(meanPer(c.server, len(c.server))), ms(meanPer(c.upstream, len(c.server))), share(c.gatewayCPU), share(c.upstreamsCPU), share(c.harnessCPU), c.gcCycles, c.peakHeap/(1<<20), c.limitAtPeak/(1<<20), c.goroutines, c.load)
}

// metric is the value of the unlabelled series name in the gateway's
// /metrics (0 when it cannot be read).
func (s *stack) metric(name string) float64 { return s.metrics(name)[0] }

// metrics are the values of the unlabelled series names, in order, from
// one scrape of the gateway's /metrics (0 for one not read).
func (s *stack) metrics(names ...string) []float64 {
	out := make([]float64, len(names))
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for i, name := range names {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				out[i], _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return out
}

// meanPer is the sum of d shared over n calls (0 for none).
func meanPer(d []time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	return sum / time.Duration(n)
}
