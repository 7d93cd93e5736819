// Command load measures what the gateway costs: it starts the Forgejo
// emulator and the real gateway binary on loopback, then calls the same
// upstream operation directly and through the gateway in the same run, and
// prints throughput and p50/p99 latency for each path and their ratio, and
// the CPU time each call cost the gateway process and this one (load
// generator plus emulator) during the throughput phase.
//
//	go run ./test/load                       # defaults: 3 s per phase, 8 workers
//	go run ./test/load -duration 10s -concurrency 16 -latency-requests 3000
//	go run ./test/load -scenarios anonymous -gateway-env GOGC=400
//	go run ./test/load -scenarios anonymous -upstream-delay 0.9ms
//	go run ./test/load -scenarios documents
//
// Everything binds to 127.0.0.1; every phase is bounded in time and count.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

func main() {
	duration := flag.Duration("duration", 3*time.Second, "length of each throughput phase")
	concurrency := flag.Int("concurrency", 8, "workers in the throughput phase")
	latencyRequests := flag.Int("latency-requests", 2000, "sequential requests in the latency phase")
	maxRequests := flag.Int("max-requests", 200000, "cap on requests per throughput phase")
	scenarios := flag.String("scenarios", "anonymous,diff page", `comma-separated scenarios to run: anonymous, diff page, documents (every "document …" one) or one "document …" by name`)
	upstreamDelay := flag.Duration("upstream-delay", 0, "also run the anonymous call against an emulator taking this long per answer (a real forge: 0.9ms)")
	var gatewayEnv gatewaytest.EnvList
	flag.Var(&gatewayEnv, "gateway-env", "KEY=VALUE added to the gateway's environment only (repeatable), e.g. GOGC=400")
	flag.Parse()
	o := options{duration: *duration, concurrency: *concurrency, latencyN: *latencyRequests, maxN: *maxRequests, warmN: 200,
		names: strings.Split(*scenarios, ","), gatewayEnv: gatewayEnv, upstreamDelay: *upstreamDelay}
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// target is one way of performing an operation: a request factory.
type target struct {
	name string
	req  func() *http.Request
	// ok checks a response body (status 200 is checked by the runner).
	ok func(body []byte) bool
}

// scenario pairs the direct upstream call with the gateway call that
// performs it.
type scenario struct {
	name            string
	direct, gateway target
	// setup and teardown, when set, run before and after the scenario.
	setup, teardown func()
}

// options are the load run's parameters.
type options struct {
	duration       time.Duration
	concurrency    int
	latencyN, maxN int
	warmN          int // requests sent on each path before it is measured
	names          []string
	gatewayEnv     []string
	upstreamDelay  time.Duration
}

// wants reports whether the run includes a scenario: "documents" selects
// every fragment read, and "anonymous" the slowed-emulator run beside the
// bare one (present only with -upstream-delay).
func (o options) wants(name string) bool {
	return contains(o.names, name) || isDocumentScenario(name) && contains(o.names, "documents") ||
		strings.HasPrefix(name, "anonymous, upstream") && contains(o.names, "anonymous")
}

func run(out io.Writer, o options) error {
	tmp, err := os.MkdirTemp("", "agent-gateway-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: filepath.Join(tmp, "forgejo")})
	if err != nil {
		return err
	}
	defer emu.Close()
	demo, err := emu.SeedDemo()
	if err != nil {
		return err
	}
	bin, err := buildGateway(tmp)
	if err != nil {
		return err
	}
	env := gatewayBaseEnv(tmp, emu.URL())
	var docs *documentsFixture
	if slices.ContainsFunc(docFiles, func(d docFile) bool { return o.wants(d.scenario) }) {
		if docs, err = startDocuments(tmp); err != nil {
			return err
		}
		defer docs.emu.Close()
		env = append(env, docs.gatewayEnv()...)
		if err := docs.seed(bin, env); err != nil {
			return err
		}
	}
	gw, gwPid, stop, err := startGateway(bin, append(env, o.gatewayEnv...))
	if err != nil {
		return err
	}
	defer stop()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency * 2, MaxIdleConns: o.concurrency * 4, DisableCompression: true}}
	all := scenarios(emu, demo, gw, o.upstreamDelay)
	if docs != nil {
		more, err := docs.scenarios(gw)
		if err != nil {
			return err
		}
		all = append(all, more...)
	}
	fmt.Fprintf(out, "# agent-gateway load run\n\n%s, GOMAXPROCS=%d, %d CPUs; latency: %d sequential requests; throughput: %d workers for %s (cap %d); gateway environment: %s\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), o.latencyN, o.concurrency, o.duration, o.maxN, orDefault(strings.Join(o.gatewayEnv, " ")))
	fmt.Fprintln(out, "| scenario | path | p50 | p99 | throughput | gateway CPU per call | load + emulator CPU per call |")
	fmt.Fprintln(out, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, s := range all {
		if !o.wants(s.name) {
			continue
		}
		if err := runScenario(out, client, s, gwPid, o); err != nil {
			return err
		}
	}
	return nil
}

// runScenario measures both paths of one scenario and prints their rows and
// ratio.
func runScenario(out io.Writer, client *http.Client, s scenario, gwPid int, o options) error {
	if s.setup != nil {
		s.setup()
	}
	if s.teardown != nil {
		defer s.teardown()
	}
	var res [2]result
	for i, t := range []target{s.direct, s.gateway} {
		warm(client, t, o.warmN)
		lat, err := latency(client, t, o.latencyN)
		if err != nil {
			return fmt.Errorf("%s %s: %w", s.name, t.name, err)
		}
		gw0, self0 := processCPU(gwPid), selfCPU()
		rps, n, err := throughput(client, t, o.concurrency, o.duration, o.maxN)
		if err != nil {
			return fmt.Errorf("%s %s: %w", s.name, t.name, err)
		}
		res[i] = result{p50: lat.p(0.50), p99: lat.p(0.99), rps: rps}
		gwCPU, selfCPUUsed := processCPU(gwPid)-gw0, selfCPU()-self0
		fmt.Fprintf(out, "| %s | %s | %s | %s | %.0f req/s | %s | %s |\n", s.name, t.name, ms(res[i].p50), ms(res[i].p99), rps,
			perCall(gwCPU, n), perCall(selfCPUUsed, n))
	}
	fmt.Fprintf(out, "| %s | gateway / direct | %.2f× | +%s | %.2f× | | |\n", s.name,
		float64(res[1].p50)/float64(res[0].p50), ms(res[1].p99-res[0].p99), res[1].rps/res[0].rps)
	return nil
}

func orDefault(s string) string {
	if s == "" {
		return "defaults"
	}
	return s
}

type result struct {
	p50, p99 time.Duration
	rps      float64
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.TrimSpace(v) == s {
			return true
		}
	}
	return false
}

// buildGateway builds the binary without the race detector (figures are
// for the production build).
func buildGateway(tmp string) (string, error) {
	bin := filepath.Join(tmp, "agent-gateway")
	return bin, gatewaytest.BuildRelease(bin)
}

// gatewayBaseEnv is the gateway's environment (and the admin commands'):
// a store in tmp, the Forgejo emulator, budgets large enough not to
// interfere.
func gatewayBaseEnv(tmp, forgejoURL string) []string {
	return append(gatewaytest.CleanEnv(),
		"AGENT_GATEWAY_DATA_DIR="+filepath.Join(tmp, "data"),
		"AGENT_GATEWAY_FORGEJO_ORIGIN="+forgejoURL,
		"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE=1000000000",
		"AGENT_GATEWAY_RATELIMIT_WRITE_PER_MINUTE=1000000000",
		"AGENT_GATEWAY_RATELIMIT_IP_CEILING_PER_MINUTE=1000000000",
		"AGENT_GATEWAY_LOG_LEVEL=warn",
	)
}

// startGateway runs the binary on a free loopback port.
func startGateway(bin string, env []string) (string, int, func(), error) {
	addr, err := gatewaytest.FreeLoopbackAddr()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(env, "AGENT_GATEWAY_LISTEN="+addr)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop := func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
	url := "http://" + addr
	for i := 0; i < 300; i++ {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			return url, cmd.Process.Pid, stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return "", 0, nil, fmt.Errorf("gateway did not start")
}

func warm(c *http.Client, t target, n int) {
	for i := 0; i < n; i++ {
		_, _ = do(c, t)
	}
}

func do(c *http.Client, t target) (time.Duration, error) {
	req := t.req()
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || !t.ok(body) {
		return 0, fmt.Errorf("unexpected answer: %d %.200s", resp.StatusCode, body)
	}
	return elapsed, nil
}

type samples []time.Duration

func (s samples) p(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[int(q*float64(len(s)-1))]
}

func latency(c *http.Client, t target, n int) (samples, error) {
	s := make(samples, 0, n)
	for i := 0; i < n; i++ {
		d, err := do(c, t)
		if err != nil {
			return nil, err
		}
		s = append(s, d)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s, nil
}

func throughput(c *http.Client, t target, workers int, d time.Duration, max int) (float64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var count atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && count.Load() < int64(max) {
				if _, err := do(c, t); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(count.Load()) / time.Since(start).Seconds(), count.Load(), firstErr
}
