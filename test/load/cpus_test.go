package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func cpuSet(cpus ...int) unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return s
}

// TestParsePlacement pins -server-cpus: numbers, ranges and lists of the
// CPUs this process may use, the rest left to the load; a CPU it may not
// use, a list taking every CPU and text that is not a list are refused.
func TestParsePlacement(t *testing.T) {
	allowed := cpuSet(0, 1, 2, 3)
	tests := []struct {
		list          string
		servers, load string // cpuList of each; "" when refused
		refusal       string
	}{
		{list: "1", servers: "1", load: "0,2,3"},
		{list: "2-3", servers: "2,3", load: "0,1"},
		{list: "0, 3", servers: "0,3", load: "1,2"},
		{list: "1,1", servers: "1", load: "0,2,3"},
		{list: "0-3", refusal: "leaves no CPU"},
		{list: "4", refusal: "CPU 4 is not one this process may use (0,1,2,3)"},
		{list: "-1", refusal: `"" is not a CPU number`},
		{list: "3-1", refusal: "not a range"},
		{list: "1-x", refusal: "not a range"},
		{list: "a", refusal: "not a CPU number"},
		{list: "1,", refusal: "not a CPU number"},
	}
	for _, tc := range tests {
		p, err := parsePlacement(tc.list, allowed)
		if tc.refusal != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("%q: got %v, want a refusal with %q", tc.list, err, tc.refusal)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.list, err)
			continue
		}
		if got := cpuList(p.servers); got != tc.servers {
			t.Errorf("%q: servers on %s, want %s", tc.list, got, tc.servers)
		}
		if got := cpuList(p.load); got != tc.load {
			t.Errorf("%q: load on %s, want %s", tc.list, got, tc.load)
		}
		if p.before != allowed {
			t.Errorf("%q: the affinity to give back is %s, want %s", tc.list, cpuList(p.before), cpuList(allowed))
		}
	}
	if p, err := parsePlacement(" ", allowed); p != nil || err != nil {
		t.Errorf("an empty list: got %v, %v; want no placement", p, err)
	}
	if note := (*placement)(nil).note(); note != "" {
		t.Errorf("no placement notes %q", note)
	}
}

// twoCPUs returns a placement of the servers on this process's last CPU,
// skipping the test on a machine where it may use only one.
func twoCPUs(t *testing.T) *placement {
	t.Helper()
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Count() < 2 {
		t.Skipf("this process may use CPUs %s; a placement needs two", cpuList(allowed))
	}
	last := strings.Split(cpuList(allowed), ",")
	p, err := parsePlacement(last[len(last)-1], allowed)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// threadCPUs returns the affinity of each of this process's threads.
func threadCPUs(t *testing.T) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range entries {
		tid, _ := strconv.Atoi(e.Name())
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil {
			out[tid] = cpuList(s)
		}
	}
	return out
}

// TestPlacementStartAndPin: a server started with a placement runs on the
// servers' CPUs from its start, the forking thread gets its own CPUs back,
// pin moves every thread of this process onto the load's CPUs and unpin
// gives them back.
func TestPlacementStartAndPin(t *testing.T) {
	p := twoCPUs(t)
	cmd := exec.Command("sleep", "30")
	if err := p.start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(cmd.Process.Pid, &got); err != nil {
		t.Fatal(err)
	}
	if got != p.servers {
		t.Errorf("the server runs on CPUs %s, want %s", cpuList(got), cpuList(p.servers))
	}
	before := cpuList(p.before)
	for tid, cpus := range threadCPUs(t) {
		if cpus != before {
			t.Errorf("after the start, thread %d runs on CPUs %s, want %s", tid, cpus, before)
		}
	}

	if err := p.pin(); err != nil {
		t.Fatal(err)
	}
	// Threads started after pin take the mask of the thread they are
	// cloned from.
	done := make(chan struct{})
	for range 4 {
		go func() { time.Sleep(10 * time.Millisecond); done <- struct{}{} }()
	}
	for range 4 {
		<-done
	}
	load := cpuList(p.load)
	for tid, cpus := range threadCPUs(t) {
		if cpus != load {
			t.Errorf("after pin, thread %d runs on CPUs %s, want %s", tid, cpus, load)
		}
	}
	if err := p.unpin(); err != nil {
		t.Fatal(err)
	}
	for tid, cpus := range threadCPUs(t) {
		if cpus != before {
			t.Errorf("after unpin, thread %d runs on CPUs %s, want %s", tid, cpus, before)
		}
	}
	if err := p.check(cmd.Process.Pid); err != nil {
		t.Errorf("check of the placed server: %v", err)
	}
	if err := p.check(os.Getpid()); err == nil {
		t.Errorf("check passed this process, which runs on CPUs %s", before)
	}
}

// TestRunPlaced runs the anonymous scenario for a moment with the servers
// on a CPU of their own: the gateway and the bare proxy are started there
// (run checks each and fails otherwise), the header says where each part
// ran, and this process's threads have their CPUs back afterwards.
func TestRunPlaced(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	p := twoCPUs(t)
	var out bytes.Buffer
	o := options{place: p, duration: 200 * time.Millisecond, concurrency: []int{2}, paths: []string{"owned"}, rounds: 1, latencyN: 10, maxN: 50, warmN: 5,
		names: []string{"anonymous"}}
	if err := run(&out, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	for _, row := range []string{
		regexp.QuoteMeta("; servers on CPU " + cpuList(p.servers) + ", load generator and emulators on CPU " + cpuList(p.load)),
		`GOMAXPROCS=` + strconv.Itoa(p.load.Count()) + `,`,
		`\| anonymous \| bare proxy \| 2 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| gateway \| 2 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no row matching %s in:\n%s", row, report)
		}
	}
	before := cpuList(p.before)
	for tid, cpus := range threadCPUs(t) {
		if cpus != before {
			t.Errorf("after the run, thread %d runs on CPUs %s, want %s", tid, cpus, before)
		}
	}
	if got, want := runtime.GOMAXPROCS(0), p.before.Count(); got != want {
		t.Errorf("after the run GOMAXPROCS is %d, want the runtime's own %d", got, want)
	}
}
