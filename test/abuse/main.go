// Command abuse is the hostile-load run: it starts the real
// gateway binary (built without the race detector, default bounds) in
// front of the emulated upstreams with a seeded project, measures
// legitimate callers on both endpoints, then repeats them while one
// anonymous source (127.0.0.66) opens hundreds of slow 1 MiB bodies,
// floods /oauth/authorize and /oauth/register, rotates
// made-up bearers and sends huge JSON-RPC methods. It prints the legitimate callers' success
// rate and p99 before and during the attack, the gateway's peak resident
// memory, the log bytes written, the upstream requests made for the
// attacker (counted at the Forgejo emulator) and the rows added to the
// store. Beside it, an IPv6 host rotates addresses inside its /64 through
// a trusted loopback proxy with made-up bearers (ipv6.go), and two more
// attackers flood /oauth/token and /oauth/revoke with new client metadata
// document URLs, one from 127.0.0.67, one from a new loopback address for
// every request (cimd.go).
//
//	go run ./test/abuse                          # 5 s baseline, 20 s attack, 300 slow bodies
//	go run ./test/abuse -attack 60s -slow-conns 500
//	go run ./test/abuse -gateway-env AGENT_GATEWAY_HTTP_BODY_BUDGET_BYTES=67108864
//
// The emulated upstreams (Forgejo and GitHub, seeded) run in a process of
// their own: the run starts its own executable again with
// ABUSE_SERVE_UPSTREAMS set to a directory (an environment
// variable rather than a flag, so the test binary can be started the same
// way; TestMain and main both look for it), reads one JSON line of where
// everything is, asks it for the emulators' own request times and the
// attacker's requests that reached Forgejo on a loopback control server,
// and stops it by closing its stdin, which the process also sees when the
// run dies (upstreams.go, upstreams_serve.go). Real upstreams are on other
// machines; in this process they would share the Go scheduler with the
// attackers' goroutines, and the attack's cost to them would show in the
// legitimate callers' latency as if it were the gateway's; each phase's
// cost line (cost.go) gives that process's CPU apart from the gateway's
// and the run's own. The OIDC
// provider and the client metadata host, off the measured calls' path,
// stay in the run's process with the attackers and the legitimate callers.
//
// Everything binds to loopback; every phase and flood is bounded in time
// and count, and the run stops by itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// options of one run.
type options struct {
	baseline, attack time.Duration
	slowConns        int
	floodCap         int
	interval         time.Duration
	gatewayEnv       []string
	// multi are the multi-address scenarios' address counts, each run for
	// multiPhase after the single-attacker phase (multi.go).
	multi      []int
	multiPhase time.Duration
	// noLatencyBound reports the p99 bound without failing on it (the
	// brief run of the test suite, where timing is not asserted).
	noLatencyBound bool
}

func main() {
	serveUpstreamsIfAsked()
	o := options{}
	flag.DurationVar(&o.baseline, "baseline", 5*time.Second, "length of the phase before the attack")
	flag.DurationVar(&o.attack, "attack", 20*time.Second, "length of the single-attacker phase (0: only the multi-address scenarios)")
	flag.IntVar(&o.slowConns, "slow-conns", 300, "slow 1 MiB bodies held open by the attacker")
	flag.IntVar(&o.floodCap, "flood-cap", 5000, "most requests of each flood")
	flag.DurationVar(&o.interval, "interval", 200*time.Millisecond, "pause between one legitimate caller's calls")
	var env gatewaytest.EnvList
	flag.Var(&env, "gateway-env", "KEY=VALUE added to the gateway's environment only (repeatable)")
	multi := flag.String("multi", "4,8,64", "attacking addresses of each multi-address scenario, comma-separated (\"\" for none)")
	flag.DurationVar(&o.multiPhase, "multi-phase", 10*time.Second, "length of each multi-address scenario")
	flag.Parse()
	o.gatewayEnv = env
	for _, f := range strings.FieldsFunc(*multi, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 254 {
			fmt.Fprintln(os.Stderr, "abuse: -multi wants address counts from 1 to 254")
			os.Exit(2)
		}
		o.multi = append(o.multi, n)
	}
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, o options) (err error) {
	// The attacker's HTTP client meets connections the gateway refused
	// before any request (a 503 written at accept), which net/http reports
	// on the standard logger as an unsolicited response: expected here.
	log.SetOutput(io.Discard)
	s, err := startStack(o.gatewayEnv)
	if err != nil {
		return err
	}
	defer s.close()
	defer func() {
		if err == nil {
			err = s.up.failure()
		}
	}()
	ctx := context.Background()

	// Before: legitimate callers alone.
	before := runLegit(ctx, s, o.baseline, o.interval)
	rssBefore, _ := s.rss()
	rowsBefore, err := s.rows()
	if err != nil {
		return fmt.Errorf("count the store's rows: %w", err)
	}
	logBefore := s.logBytes()
	s.up.resetForgejoRequests()
	if o.attack <= 0 {
		fmt.Fprintf(out, "# agent-gateway abuse run\n\n%s, %d CPUs; baseline %s: %d legitimate calls, %.1f%% served, p99 %s; no single-attacker phase\n",
			runtime.Version(), runtime.NumCPU(), o.baseline, before.total, before.successRate(), ms(before.p99()))
		return runMultiScenarios(ctx, out, s, o, before)
	}

	// During: the same callers while the attack runs; RSS sampled.
	var peakRSS int64
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if now, _ := s.rss(); now > peakRSS {
				peakRSS = now
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	})
	var rep *attackReport
	var attacking sync.WaitGroup
	attacking.Go(func() { rep = runAttack(ctx, s, o.attack, o.slowConns, o.floodCap) })
	var v6 *ipv6Report
	attacking.Go(func() { v6 = runIPv6Attack(ctx, s, o.attack, o.floodCap) })
	during := runLegit(ctx, s, o.attack, o.interval)
	attacking.Wait()
	close(stopSampling)
	sampling.Wait()
	logDuring := s.logBytes() - logBefore
	rowsAfter, err := s.rows()
	if err != nil {
		return fmt.Errorf("count the store's rows: %w", err)
	}
	marked := s.up.forgejoMarked("fake-", attackerMarker)
	bearerUp, anonUp := marked.Bearer, marked.Query
	time.Sleep(2 * time.Second)
	rssAfter, hwm := s.rss()

	fmt.Fprintf(out, "# agent-gateway abuse run\n\n%s, %d CPUs; baseline %s, attack %s; legitimate callers on 127.0.0.1, one call each every %s; "+
		"attacker on %s: %d slow 1 MiB bodies held, floods capped at %d requests each; gateway environment: %s\n\n",
		runtime.Version(), runtime.NumCPU(), o.baseline, o.attack, o.interval, attackerSource, o.slowConns, o.floodCap, orDefault(strings.Join(o.gatewayEnv, " ")))
	fmt.Fprintln(out, "| measure | before the attack | during the attack |")
	fmt.Fprintln(out, "| --- | --- | --- |")
	fmt.Fprintf(out, "| legitimate calls | %d | %d |\n", before.total, during.total)
	fmt.Fprintf(out, "| legitimate success rate | %.1f%% | %.1f%% |\n", before.successRate(), during.successRate())
	fmt.Fprintf(out, "| legitimate p99 | %s | %s |\n", ms(before.p99()), ms(during.p99()))
	fmt.Fprintf(out, "| gateway RSS | %s | peak %s (VmHWM %s), %s 2 s after |\n", mib(rssBefore), mib(peakRSS), mib(hwm), mib(rssAfter))
	fmt.Fprintf(out, "| log bytes written | %d | %d |\n", logBefore, logDuring)
	fmt.Fprintf(out, "| upstream requests made for the attacker | | %d (made-up bearers %d, anonymous searches %d) |\n", bearerUp+anonUp, bearerUp, anonUp)
	added, byTable := rowsAdded(rowsBefore, rowsAfter)
	fmt.Fprintf(out, "| rows added to the store | | %d (%s) |\n", added, byTable)
	fmt.Fprintln(out, cimdRows(s, o.gatewayEnv, o.attack))
	fmt.Fprintf(out, "\nAttack outcomes: slow bodies %s (+%d waves of %d); /oauth/authorize %s; /oauth/register %s; made-up bearers %s; huge methods %s; client metadata token/revoke %s, from rotating addresses %s\n",
		slowString(rep), rep.slowWaves, max(1, o.slowConns/6), rep.authorize.String(), rep.register.String(), rep.bearers.String(), rep.hugeMethods.String(), rep.cimd.String(), rep.cimdRotating.String())
	fmt.Fprintln(out, v6.line(s, o.attack))
	for _, st := range []*legitStats{before, during} {
		if len(st.failures) > 0 {
			fmt.Fprintf(out, "Legitimate failures: %v\n", st.failures)
		}
	}
	return runMultiScenarios(ctx, out, s, o, before)
}

// runMultiScenarios runs each multi-address scenario and fails the run
// when the legitimate callers fell below 99% served or past three times
// the baseline p99 in any of them.
func runMultiScenarios(ctx context.Context, out io.Writer, s *stack, o options, baseline *legitStats) error {
	if len(o.multi) == 0 {
		return nil
	}
	fmt.Fprintf(out, "\n## Multi-address scenarios (%s each; legitimate callers on 127.0.0.1 must keep ≥ 99%% served and p99 ≤ 3× the baseline's)\n\n", o.multiPhase)
	var failed []string
	for i, n := range o.multi {
		// Whatever the previous phase left stalled is cut within seconds;
		// then the scenario's own baseline, unattacked, taken just before
		// it, so both see the machine equally busy (the run's own when no
		// single-attacker phase came between).
		if i > 0 || o.attack > 0 {
			time.Sleep(6 * time.Second)
			baseline = runLegit(ctx, s, o.baseline, o.interval)
		}
		rep, err := runMulti(ctx, s, n, o.multiPhase, o.interval)
		if err != nil {
			return err
		}
		text, ok := rep.lines(baseline, s, o.noLatencyBound)
		fmt.Fprintln(out, text)
		if !ok {
			failed = append(failed, strconv.Itoa(n))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("multi-address scenarios with %s addresses failed their bounds", strings.Join(failed, ", "))
	}
	return nil
}

func slowString(r *attackReport) string {
	var parts []string
	for _, k := range sortedKeys(r.slow.Answered) {
		parts = append(parts, fmt.Sprintf("%d×%d", k, r.slow.Answered[k]))
	}
	return fmt.Sprintf("answered %s, %d with Retry-After, closed %d, held %d", strings.Join(parts, " "), r.slow.RetryAfter, r.slow.Closed, r.slow.Held)
}

func rowsAdded(before, after map[string]int64) (int64, string) {
	var total int64
	var parts []string
	for _, t := range sortedKeys(after) {
		if d := after[t] - before[t]; d != 0 {
			total += d
			parts = append(parts, fmt.Sprintf("%s +%d", t, d))
		}
	}
	if len(parts) == 0 {
		return 0, "none"
	}
	return total, strings.Join(parts, ", ")
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func orDefault(s string) string {
	if s == "" {
		return "defaults"
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
