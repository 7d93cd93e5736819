// Command faults is the dependency-fault run: it starts two
// replicas of the real gateway binary on a PostgreSQL database and a Redis
// key prefix of its own, and a third gateway on SQLite, puts honest load on
// them from a few clients through a balancer that follows /readyz, and
// then, one after another: restarts the replicas one at a time, restarts
// PostgreSQL, stops it, stops Redis, fills the SQLite gateway's disk, and
// makes Forgejo refuse, hang and answer 502. For each fault it prints the
// calls made and failed, the codes seen, the recovery time after the fault
// ended and the acknowledged rows lost, and it fails when a call accepted
// during the rolling restart failed, when callers were not served again
// within 2 s of a dependency's return (a lockout), when an acknowledged row
// is missing, or when a fault was answered as the caller's doing
// (invalid_token, a spent budget, 429).
//
//	go run ./test/faults                    # 10 s PostgreSQL and Redis stops, 5 s for the rest
//	go run ./test/faults -stop 3s -outage 2s -settle 3s
//
// Everything is loopback. The machine's PostgreSQL and Redis are never
// stopped or reconfigured: each is cut in a TCP proxy of the run's own
// (test/tcpcut, in the manner of Toxiproxy), the run creates and drops its
// own database and keeps its budgets under its own ratelimit.key_prefix.
// The full disk is RLIMIT_FSIZE lowered on the SQLite gateway's process
// (prlimit, no root): every write past 4 KiB of a file fails with EFBIG,
// as on a full disk, and raising it again is the space coming back. Every
// phase is bounded in time, and the run stops by itself.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// options of one run.
type options struct {
	// stop is how long PostgreSQL and Redis stay down; outage how long
	// each other fault lasts; settle how long the load runs on after a
	// fault ends (at least recoveryBound plus a second, to see a lockout).
	stop, outage, settle, baseline time.Duration
	clients                        int
	interval                       time.Duration
}

// recoveryBound is how soon after a dependency's return every caller must
// be served again.
const recoveryBound = 2 * time.Second

func main() {
	o := options{}
	flag.DurationVar(&o.stop, "stop", 10*time.Second, "how long PostgreSQL and Redis are stopped")
	flag.DurationVar(&o.outage, "outage", 5*time.Second, "how long the disk is full and Forgejo refuses, hangs or answers 502")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "load after each fault ends (at least 3s)")
	flag.DurationVar(&o.baseline, "baseline", 3*time.Second, "load before the first fault")
	flag.IntVar(&o.clients, "clients", 6, "honest clients of the replica pair (the SQLite gateway has one more)")
	flag.DurationVar(&o.interval, "interval", 50*time.Millisecond, "pause between one client's calls")
	flag.Parse()
	if o.settle < recoveryBound+time.Second || o.clients < 1 {
		fmt.Fprintln(os.Stderr, "faults: -settle must be at least 3s and -clients at least 1")
		os.Exit(2)
	}
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, o options) error {
	s, err := startStack()
	if err != nil {
		return err
	}
	defer s.close()
	results, err := runPhases(s, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# agent-gateway fault run\n\n%s, %d CPUs; %d clients on two replicas (PostgreSQL, Redis), 1 on a SQLite gateway, one call each every %s; "+
		"PostgreSQL and Redis stopped %s, other faults %s, %s of load after each\n\n",
		runtime.Version(), runtime.NumCPU(), o.clients, o.interval, o.stop, o.outage, o.settle)
	if err := report(out, results); err != nil {
		s.keep = true
		fmt.Fprintf(out, "\nThe gateways' logs are kept in %s\n", s.tmp)
		return err
	}
	return nil
}
