// Command load measures what the gateway costs: it starts the Forgejo
// emulator and the real gateway binary on loopback, then calls the same
// upstream operation directly and through the gateway in the same run, and
// prints throughput and p50/p99 latency for each path and their ratio, and
// the CPU time each call cost the gateway process and this one (load
// generator plus emulator) during the throughput phase. The anonymous
// scenarios also go through a bare reverse proxy in a process of its own
// (bareproxy.go): the floor one more HTTP hop sets on this machine, its
// own CPU in the gateway column of its row.
//
//	go run ./test/load                       # defaults: 3 s per phase, 8 workers
//	go run ./test/load -duration 10s -concurrency 16 -latency-requests 3000
//	go run ./test/load -scenarios anonymous -gateway-env GOGC=400
//	go run ./test/load -scenarios anonymous -upstream-delay 0.9ms
//	go run ./test/load -scenarios documents
//	go run ./test/load -scenarios anonymous -concurrency 1,8,64 -paths owned,sdk
//	go run ./test/load -scenarios anonymous -paths owned,github-mcp-server -github-mcp-server /tmp/github-mcp-server
//	go run ./test/load -scenarios anonymous -paths audit,owned -rounds 8 -rate 3500   # equal work on both paths
//	go run ./test/load -scenarios anonymous -upstream-delay 0.9ms -concurrency 1,8,64 -server-cpus 1   # servers on CPU 1, the load on the rest
//
// With -paths owned,sdk (the default) two gateway processes serve the same
// store: one with the owned tools/call path (mcp.owned_tool_calls, the
// default) and one with it off, so every gateway row has its SDK-path row
// beside it, measured in the same run, and a ratio row compares the two.
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

func main() {
	serveBareProxyFromEnv()
	duration := flag.Duration("duration", 3*time.Second, "length of each throughput phase")
	concurrency := flag.String("concurrency", "8", "workers in the throughput phase; a comma-separated list measures each")
	paths := flag.String("paths", "owned,sdk", "gateway paths to measure: owned (mcp.owned_tool_calls on), sdk (off), audit (owned, with audit.mode best_effort recording anonymous reads too), github-mcp-server (GitHub's MCP server, -github-mcp-server; anonymous only); two side by side")
	rounds := flag.Int("rounds", 1, "blocks of the latency phase, and throughput phases per path and worker count, the paths taking turns, so a drift in the machine's speed falls on both")
	latencyRequests := flag.Int("latency-requests", 2000, "sequential requests in the latency phase")
	maxRequests := flag.Int("max-requests", 200000, "cap on requests per throughput phase")
	scenarios := flag.String("scenarios", "anonymous,diff page", `comma-separated scenarios to run: anonymous, diff page, documents (every "document …" one) or one "document …" by name`)
	upstreamDelay := flag.Duration("upstream-delay", 0, "also run the anonymous call against an emulator taking this long per answer (a real forge: 0.9ms)")
	rate := flag.Float64("rate", 0, "calls a second each throughput phase sends at most, shared by its workers (0: as fast as they can); the same rate for every path compares CPU per call at equal work")
	ghmcpBin := flag.String("github-mcp-server", "", "a github-mcp-server binary built from its source, for the github-mcp-server path (ghmcp.go)")
	serverCPUs := flag.String("server-cpus", "", "CPUs (e.g. 1, or 2-3) for the measured servers (each gateway path, the bare proxy, github-mcp-server), the rest of this process's for the load generator and emulators (cpus.go); empty: every process on every CPU")
	var gatewayEnv gatewaytest.EnvList
	flag.Var(&gatewayEnv, "gateway-env", "KEY=VALUE added to the gateway's environment only (repeatable), e.g. GOGC=400")
	flag.Parse()
	levels, err := parseLevels(*concurrency)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load: -concurrency:", err)
		os.Exit(2)
	}
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "load: -rounds must be at least 1")
		os.Exit(2)
	}
	allowed, err := allowedCPUs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load: read this process's CPUs:", err)
		os.Exit(1)
	}
	place, err := parsePlacement(*serverCPUs, allowed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load: -server-cpus:", err)
		os.Exit(2)
	}
	o := options{place: place, duration: *duration, concurrency: levels, latencyN: *latencyRequests, maxN: *maxRequests, warmN: 200, rounds: *rounds,
		names: strings.Split(*scenarios, ","), gatewayEnv: gatewayEnv, upstreamDelay: *upstreamDelay, paths: strings.Split(*paths, ","), ghmcpBin: *ghmcpBin, rate: *rate}
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
	// floor marks a scenario whose direct call is also sent through the
	// bare proxy (bareproxy.go).
	floor bool
	// setup and teardown, when set, run before and after the scenario.
	setup, teardown func()
}

// options are the load run's parameters.
type options struct {
	duration       time.Duration
	concurrency    []int // worker counts of the throughput phases
	latencyN, maxN int
	paths          []string // "owned", "sdk", "audit", "github-mcp-server"
	ghmcpBin       string   // the github-mcp-server path's binary
	rate           float64  // calls a second a throughput phase sends at most (0: no pacing)
	rounds         int      // latency blocks, and throughput phases per path and worker count, taken in turns
	warmN          int      // requests sent on each path before it is measured
	names          []string
	gatewayEnv     []string
	upstreamDelay  time.Duration
	place          *placement // -server-cpus; nil: every process on every CPU
}

// wants reports whether the run includes a scenario: "documents" selects
// every fragment read, and "anonymous" the slowed-emulator run beside the
// bare one (present only with -upstream-delay).
func (o options) wants(name string) bool {
	return contains(o.names, name) || isDocumentScenario(name) && contains(o.names, "documents") ||
		strings.HasPrefix(name, "anonymous, upstream") && contains(o.names, "anonymous")
}

func run(out io.Writer, o options) error {
	if slices.ContainsFunc(o.paths, func(p string) bool { return strings.TrimSpace(p) == ghmcpPath }) {
		if o.ghmcpBin == "" {
			return fmt.Errorf("the %s path needs -github-mcp-server", ghmcpPath)
		}
		if o.upstreamDelay > 0 || slices.ContainsFunc(o.names, func(n string) bool { return strings.TrimSpace(n) != "anonymous" }) {
			return fmt.Errorf("the %s path runs the anonymous scenario only, without -upstream-delay", ghmcpPath)
		}
	}
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
	// After the build and the seeding, which take every CPU: the
	// emulators, already running, move with this process's threads.
	if o.place != nil {
		if err := o.place.pin(); err != nil {
			return err
		}
		defer func() { _ = o.place.unpin() }()
	}
	// One gateway process per path, over the same store; each path's
	// scenarios are the same calls made to its process.
	var gws []gatewayPath
	var sets [][]scenario
	var fake *fakeGitHub // the github-mcp-server path's GitHub (ghmcp.go)
	for _, p := range o.paths {
		gp := gatewayPath{name: "gateway"}
		switch strings.TrimSpace(p) {
		case ghmcpPath:
			if fake, err = startFakeGitHub(); err != nil {
				return err
			}
			defer fake.srv.Close()
			gp, stop, err := startGitHubMCPServer(o.ghmcpBin, fake, o.place)
			if err != nil {
				return err
			}
			defer stop()
			// Its calls stand in the anonymous scenario's place (the
			// only one the path runs, checked above).
			set := scenarios(emu, demo, "", 0)
			set[0].gateway = ghmcpCall(gp.url)
			gws, sets = append(gws, gp), append(sets, set)
			continue
		case "owned":
		case "sdk":
			gp.name, gp.env = "gateway (SDK path)", []string{"AGENT_GATEWAY_MCP_OWNED_TOOL_CALLS=false"}
		case "audit":
			gp.name, gp.env = "gateway (audit)", []string{"AGENT_GATEWAY_AUDIT_MODE=best_effort", "AGENT_GATEWAY_AUDIT_ANONYMOUS=true"}
		default:
			return fmt.Errorf("unknown path %q (owned, sdk or audit)", p)
		}
		var stop func()
		if gp.url, gp.pid, stop, err = startGateway(bin, slices.Concat(env, gp.env, o.gatewayEnv), o.place); err != nil {
			return err
		}
		defer stop()
		set := scenarios(emu, demo, gp.url, o.upstreamDelay)
		if docs != nil {
			more, err := docs.scenarios(gp.url)
			if err != nil {
				return err
			}
			set = append(set, more...)
		}
		gws, sets = append(gws, gp), append(sets, set)
	}
	if len(gws) == 0 {
		return fmt.Errorf("no gateway path to measure")
	}
	var floor *gatewayPath
	if slices.ContainsFunc(sets[0], func(s scenario) bool { return s.floor && o.wants(s.name) }) {
		proxy, stop, err := startBareProxy(emu.URL(), o.place)
		if err != nil {
			return err
		}
		defer stop()
		floor = &proxy
	}

	most := slices.Max(o.concurrency)
	// Room to keep every worker's connection to each server: the
	// emulator, the bare proxy and each gateway path.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: most * 2, MaxIdleConns: most * 2 * (len(gws) + 2), DisableCompression: true}}
	fmt.Fprintf(out, "# agent-gateway load run\n\n%s, GOMAXPROCS=%d, %d CPUs; latency: %d sequential requests; throughput: %s workers for %s each (cap %d%s)%s; gateway environment: %s%s\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), o.latencyN, joinInts(o.concurrency), o.duration, o.maxN, rateNote(o.rate), roundsNote(o.rounds), orDefault(strings.Join(o.gatewayEnv, " ")), o.place.note())
	fmt.Fprintln(out, "| scenario | path | clients | p50 | p99 | throughput | gateway CPU per call | load + emulator CPU per call |")
	fmt.Fprintln(out, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for i, s := range sets[0] {
		if !o.wants(s.name) {
			continue
		}
		paths := make([]target, len(gws))
		for j := range gws {
			paths[j] = sets[j][i].gateway
			paths[j].name = gws[j].name
		}
		if err := runScenario(out, client, s, floor, paths, gws, o); err != nil {
			return err
		}
	}
	if fake != nil {
		// A request the fake does not answer means github-mcp-server's
		// figure is not its tool call's alone.
		if err := fake.check(); err != nil {
			return err
		}
	}
	for _, gp := range gws {
		if !gp.audited() {
			continue
		}
		written, dropped, err := auditRecords(gp.url)
		if err != nil {
			return err
		}
		// A dropped record's cost is missing from the figure.
		if written == 0 || dropped != 0 {
			return fmt.Errorf("%s wrote %.0f audit records and dropped %.0f: its CPU per call is not the record's cost", gp.name, written, dropped)
		}
		fmt.Fprintf(out, "\n%s: %.0f audit records written, none dropped\n", gp.name, written)
	}
	return nil
}

// audited reports whether the path records its calls.
func (gp gatewayPath) audited() bool {
	return slices.Contains(gp.env, "AGENT_GATEWAY_AUDIT_MODE=best_effort")
}

// auditRecords reads agent_gateway_audit_records_total's written and
// queue_full series from the gateway's /metrics.
func auditRecords(url string) (written, dropped float64, err error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case `agent_gateway_audit_records_total{result="written"}`:
			written = v
		case `agent_gateway_audit_records_total{result="queue_full"}`:
			dropped = v
		}
	}
	return written, dropped, nil
}

// gatewayPath is one gateway process of the run: the owned tools/call path
// on, or off (the SDK's handler serves every call), or on with the audit
// record.
type gatewayPath struct {
	name, url string
	env       []string
	pid       int
}

func rateNote(rate float64) string {
	if rate <= 0 {
		return ""
	}
	return fmt.Sprintf(", paced at %.0f calls/s", rate)
}

func roundsNote(rounds int) string {
	if rounds == 1 {
		return ""
	}
	return fmt.Sprintf(", %d rounds a path in turns for latency and throughput", rounds)
}

// settle is how long a throughput phase's gateways are left to finish
// work queued by its calls (the audit writer's last batch) before their
// CPU is read.
const settle = 500 * time.Millisecond

// runScenario measures the direct path, the bare proxy (given floor, for
// a scenario that has one) and each gateway path of one scenario: latency
// (sequential), then throughput and CPU per call at each worker count; it
// prints their rows, each one's ratio to the direct path, and, with two
// gateway paths, the first's to the second's.
func runScenario(out io.Writer, client *http.Client, s scenario, floor *gatewayPath, gateways []target, procs []gatewayPath, o options) error {
	if s.setup != nil {
		s.setup()
	}
	if s.teardown != nil {
		defer s.teardown()
	}
	// pids[i] is the process serving targets[i]; the direct path's is the
	// first gateway, whose CPU while idle its column shows.
	targets, pids := []target{s.direct}, []int{procs[0].pid}
	if floor != nil && s.floor {
		targets, pids = append(targets, through(s.direct, floor.url, floor.name)), append(pids, floor.pid)
	}
	first := len(targets) // the first gateway path's index
	targets = append(targets, gateways...)
	for _, p := range procs {
		pids = append(pids, p.pid)
	}
	type measured struct {
		p50, p99 time.Duration
		rps, cpu []float64 // by worker count
	}
	res := make([]measured, len(targets))
	lats, err := latencies(client, targets, o.latencyN, o.rounds, o.warmN)
	if err != nil {
		return fmt.Errorf("%s %w", s.name, err)
	}
	for i, lat := range lats {
		res[i].p50, res[i].p99 = lat.p(0.50), lat.p(0.99)
	}
	// Each worker count's throughput phases: every target in turn, for
	// o.rounds rounds. A gateway's CPU is read around the whole sequence
	// and after settle, so work its calls queued (the audit writer's)
	// counts even when it ran during another target's phase; the direct
	// path's column is the gateway's CPU during its own phases only.
	for k, workers := range o.concurrency {
		gw0 := make([]time.Duration, len(targets)) // a gateway's CPU before the sequence
		for i := 1; i < len(targets); i++ {
			gw0[i] = gatewaytest.ProcessCPU(pids[i])
		}
		calls, elapsed := make([]int64, len(targets)), make([]time.Duration, len(targets))
		self, direct := make([]time.Duration, len(targets)), time.Duration(0)
		for range o.rounds {
			for i, t := range targets {
				self0, idle0 := selfCPU(), time.Duration(0)
				if i == 0 {
					idle0 = gatewaytest.ProcessCPU(pids[0])
				}
				n, d, err := throughput(client, t, workers, o.duration, o.maxN, o.rate)
				if err != nil {
					return fmt.Errorf("%s %s: %w", s.name, t.name, err)
				}
				calls[i], elapsed[i], self[i] = calls[i]+n, elapsed[i]+d, self[i]+selfCPU()-self0
				if i == 0 {
					direct += gatewaytest.ProcessCPU(pids[0]) - idle0
				}
			}
		}
		time.Sleep(settle)
		for i, t := range targets {
			gwCPU := direct
			if i > 0 {
				gwCPU = gatewaytest.ProcessCPU(pids[i]) - gw0[i]
			}
			rps := float64(calls[i]) / elapsed[i].Seconds()
			res[i].rps, res[i].cpu = append(res[i].rps, rps), append(res[i].cpu, float64(gwCPU)/float64(max(calls[i], 1)))
			p50, p99 := ms(res[i].p50), ms(res[i].p99)
			if k > 0 {
				p50, p99 = "", ""
			}
			fmt.Fprintf(out, "| %s | %s | %d | %s | %s | %.0f req/s | %s | %s |\n", s.name, t.name, workers, p50, p99, rps, perCall(gwCPU, calls[i]), perCall(self[i], calls[i]))
		}
	}
	for i := 1; i < len(targets); i++ {
		fmt.Fprintf(out, "| %s | %s / direct | | %.2f× | +%s | %.2f× | | |\n", s.name, targets[i].name,
			float64(res[i].p50)/float64(res[0].p50), ms(res[i].p99-res[0].p99), res[i].rps[0]/res[0].rps[0])
	}
	if len(gateways) == 2 {
		a, b := first, first+1
		for k, workers := range o.concurrency {
			fmt.Fprintf(out, "| %s | %s / %s | %d | %.2f× | | %.2f× | %.2f× | |\n", s.name, targets[a].name, targets[b].name, workers,
				float64(res[a].p50)/float64(res[b].p50), res[a].rps[k]/res[b].rps[k], res[a].cpu[k]/res[b].cpu[k])
		}
	}
	return nil
}

// parseLevels reads -concurrency: positive worker counts, comma-separated.
func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive worker count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, "/")
}

func orDefault(s string) string {
	if s == "" {
		return "defaults"
	}
	return s
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

// startGateway runs the binary on a free loopback port, on the servers'
// CPUs with a placement.
func startGateway(bin string, env []string, place *placement) (string, int, func(), error) {
	addr, err := gatewaytest.FreeLoopbackAddr()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(bin, "serve")
	gatewaytest.TiedToParent(cmd)
	cmd.Env = append(env, "AGENT_GATEWAY_LISTEN="+addr)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := place.start(cmd); err != nil {
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

// latencies measures n sequential calls to each target, in rounds blocks
// taken in turns, each after its own warm-up of warmN calls: a drift in the
// machine's speed during the phase then falls on every path, as in the
// throughput phases. With one round each target's calls run back to back.
func latencies(c *http.Client, targets []target, n, rounds, warmN int) ([]samples, error) {
	out := make([]samples, len(targets))
	for r := range rounds {
		block := n / rounds
		if r < n%rounds {
			block++
		}
		for i, t := range targets {
			warm(c, t, warmN)
			lat, err := latency(c, t, block)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			out[i] = append(out[i], lat...)
		}
	}
	for _, lat := range out {
		slices.Sort(lat)
	}
	return out, nil
}

// latency makes n sequential calls to t and returns their times in the
// order made; latencies sorts the pooled blocks.
func latency(c *http.Client, t target, n int) (samples, error) {
	s := make(samples, 0, n)
	for i := 0; i < n; i++ {
		d, err := do(c, t)
		if err != nil {
			return nil, err
		}
		s = append(s, d)
	}
	return s, nil
}

// throughput runs workers calling t for d (or max calls) and returns the
// calls made and the time they took. With rate > 0 the workers together
// start at most rate calls a second, each taking the next start time from
// one schedule: a path faster than the rate then idles between calls
// instead of making more, so two paths paced alike do the same work.
func throughput(c *http.Client, t target, workers int, d time.Duration, max int, rate float64) (int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var count atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	var slot atomic.Int64 // the next call's start, in calls since start
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && count.Load() < int64(max) {
				if rate > 0 {
					at := start.Add(time.Duration(float64(slot.Add(1)-1) / rate * float64(time.Second)))
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Until(at)):
					}
				}
				if _, err := do(c, t); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	return count.Load(), time.Since(start), firstErr
}
