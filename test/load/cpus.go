package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// placement is -server-cpus: the measured servers (each gateway path, the
// bare proxy, github-mcp-server) run on CPUs of their own, and this
// process (the load generator and the emulators) on the rest.
//
// Without it every process shares every CPU, and on a small machine the
// load generator and the emulated forge take CPU from the server they
// measure and wake on the CPU it waits on; a production gateway has its
// own cores and reaches its forge and its clients over the network. With
// it a figure is the server's alone: its calls a second are what its own
// CPUs allow, and its latency is not lengthened by its load. Both
// placements print their figures; neither replaces the other.
type placement struct {
	servers, load unix.CPUSet
	before        unix.CPUSet // this process's affinity before pin
}

// parsePlacement reads a CPU list ("1", "2-3", "1,3") for the servers out
// of allowed, this process's CPUs; the rest of allowed is left to the
// load. An empty list is no placement (nil).
func parsePlacement(list string, allowed unix.CPUSet) (*placement, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	p := &placement{before: allowed}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number", list, lo)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, fmt.Errorf("CPU list %q: %q is not a range", list, part)
			}
		}
		for cpu := first; cpu <= last; cpu++ {
			if cpu < 0 || !allowed.IsSet(cpu) {
				return nil, fmt.Errorf("CPU list %q: CPU %d is not one this process may use (%s)", list, cpu, cpuList(allowed))
			}
			p.servers.Set(cpu)
		}
	}
	p.load = allowed
	for cpu := range cpuLimit {
		if p.servers.IsSet(cpu) {
			p.load.Clear(cpu)
		}
	}
	if p.load.Count() == 0 {
		return nil, fmt.Errorf("CPU list %q leaves no CPU for the load generator (this process may use %s)", list, cpuList(allowed))
	}
	return p, nil
}

// cpuLimit bounds the CPU numbers a set is read for: a CPUSet's size.
const cpuLimit = len(unix.CPUSet{}) * 64

// cpuList writes a set as a comma-separated list of CPU numbers.
func cpuList(s unix.CPUSet) string {
	var out []string
	for cpu := range cpuLimit {
		if s.IsSet(cpu) {
			out = append(out, strconv.Itoa(cpu))
		}
	}
	return strings.Join(out, ",")
}

// allowedCPUs is this process's affinity.
func allowedCPUs() (unix.CPUSet, error) {
	var s unix.CPUSet
	err := unix.SchedGetaffinity(0, &s)
	return s, err
}

// pin moves every thread of this process onto the load's CPUs. A thread
// the runtime starts later is cloned from one already moved and keeps its
// mask; the walk is repeated until it finds no thread it had not moved,
// for one started during the walk. GOMAXPROCS is set to the load's CPUs,
// as the runtime would have set it had the process started on them.
func (p *placement) pin() error {
	if err := setThreads(&p.load); err != nil {
		return err
	}
	runtime.GOMAXPROCS(p.load.Count())
	return nil
}

// unpin gives this process's threads back the affinity they had, and the
// runtime its own choice of GOMAXPROCS.
func (p *placement) unpin() error {
	err := setThreads(&p.before)
	// After the threads: the runtime reads its CPUs from its affinity.
	runtime.SetDefaultGOMAXPROCS()
	return err
}

func setThreads(set *unix.CPUSet) error {
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		moved := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			// A thread that ended since the listing is not an error.
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("set the affinity of thread %d: %w", tid, err)
			}
			done[tid] = true
			moved++
		}
		if moved == 0 {
			return nil
		}
	}
}

// start starts cmd on the servers' CPUs (with no placement, as it is). A
// child takes the affinity of the thread that forks it, so that thread is
// held and given the servers' CPUs for the fork, then its own back: the
// server runs on its CPUs from its first instruction, and its runtime
// sizes GOMAXPROCS to them.
func (p *placement) start(cmd *exec.Cmd) error {
	if p == nil {
		return cmd.Start()
	}
	runtime.LockOSThread()
	var own unix.CPUSet
	if err := unix.SchedGetaffinity(0, &own); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	if err := unix.SchedSetaffinity(0, &p.servers); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	startErr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &own); err != nil {
		// The thread stays locked to this goroutine, whose run ends with
		// the error, so no other work is scheduled on it.
		if startErr == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return fmt.Errorf("give the forking thread its CPUs back: %w", err)
	}
	runtime.UnlockOSThread()
	if startErr != nil {
		return startErr
	}
	if err := p.check(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return nil
}

// check confirms that pid runs on the servers' CPUs: a figure taken with
// the server elsewhere would be reported as placed.
func (p *placement) check(pid int) error {
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &got); err != nil {
		return fmt.Errorf("read the affinity of process %d: %w", pid, err)
	}
	if got != p.servers {
		return fmt.Errorf("process %d runs on CPUs %s, not %s", pid, cpuList(got), cpuList(p.servers))
	}
	return nil
}

// note is the placement's part of the report's header.
func (p *placement) note() string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("; servers on CPU %s, load generator and emulators on CPU %s", cpuList(p.servers), cpuList(p.load))
}
