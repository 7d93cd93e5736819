package server

import (
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// The collector policy's defaults, chosen by the sweep in
// docs/performance.md ("Collector policy"): a GOGC of 400 cuts the
// collector's share of an anonymous call's CPU, and the soft memory limit
// keeps the heap it allows from growing the resident set past the 20 MB
// diff's budget: near the limit the collector runs as often as it must.
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 24 << 20
)

// memoryLimitOff is the runtime's "no limit" (math.MaxInt64), what
// GOMEMLIMIT=off means.
const memoryLimitOff = math.MaxInt64

// gcPercentOff is GOGC=off: the collector runs only at the memory limit.
const gcPercentOff = -1

// parseGCPercent reads runtime.gc_percent as GOGC is written: a
// non-negative percentage or "off".
func parseGCPercent(v string) (int, error) {
	if strings.EqualFold(v, "off") {
		return gcPercentOff, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a non-negative percentage such as 100, or off")
	}
	return n, nil
}

// memoryUnits are GOMEMLIMIT's suffixes, longest first so "KiB" is not
// read as "B".
var memoryUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseMemoryLimit reads runtime.memory_limit as GOMEMLIMIT is written: a
// byte count with an optional B, KiB, MiB, GiB or TiB suffix, or "off".
func parseMemoryLimit(v string) (int64, error) {
	if strings.EqualFold(v, "off") {
		return memoryLimitOff, nil
	}
	num, shift := v, uint(0)
	for _, u := range memoryUnits {
		if strings.HasSuffix(v, u.suffix) {
			num, shift = strings.TrimSuffix(v, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("want a positive size such as 64MiB (B, KiB, MiB, GiB, TiB), or off")
	}
	return n << shift, nil
}

// formatMemoryLimit writes a limit back the way it is configured.
func formatMemoryLimit(n int64) string {
	if n == memoryLimitOff {
		return "off"
	}
	for _, u := range memoryUnits {
		if u.shift > 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// formatGCPercent writes a percentage back the way it is configured.
func formatGCPercent(n int) string {
	if n < 0 {
		return "off"
	}
	return strconv.Itoa(n)
}

// runtimeTuner is what applyRuntime changes: runtime/debug in production.
type runtimeTuner struct {
	setGCPercent   func(int) int
	setMemoryLimit func(int64) int64
}

var debugTuner = runtimeTuner{setGCPercent: debug.SetGCPercent, setMemoryLimit: debug.SetMemoryLimit}

// runtimePolicy is the collector policy in force and where each half came
// from, for the start-up log.
type runtimePolicy struct {
	GCPercent, GCPercentFrom     string
	MemoryLimit, MemoryLimitFrom string
}

// applyRuntime sets the collector policy of cfg, except where the process
// environment already sets GOGC or GOMEMLIMIT: an operator's environment
// wins over the configuration, as for any Go program, so a unit file can
// override it without editing the YAML.
func applyRuntime(cfg Config, getenv func(string) string, t runtimeTuner) runtimePolicy {
	p := runtimePolicy{GCPercent: formatGCPercent(cfg.GCPercent), GCPercentFrom: "runtime.gc_percent",
		MemoryLimit: formatMemoryLimit(cfg.MemoryLimit), MemoryLimitFrom: "runtime.memory_limit"}
	if v := getenv("GOGC"); v != "" {
		p.GCPercent, p.GCPercentFrom = v, "GOGC"
	} else {
		t.setGCPercent(cfg.GCPercent)
	}
	if v := getenv("GOMEMLIMIT"); v != "" {
		p.MemoryLimit, p.MemoryLimitFrom = v, "GOMEMLIMIT"
	} else {
		t.setMemoryLimit(cfg.MemoryLimit)
	}
	return p
}

// logRuntime records the collector policy in force at start, and which
// setting each half came from.
func logRuntime(log *slog.Logger, p runtimePolicy) {
	log.Info("collector policy", "gc_percent", p.GCPercent, "gc_percent_from", p.GCPercentFrom,
		"memory_limit", p.MemoryLimit, "memory_limit_from", p.MemoryLimitFrom)
}
