package gatewaytest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SelfCPU is the user and system CPU time the test process has used so
// far. Benchmarks divide its growth by b.N (cpu-µs/call, cpu-µs/record):
// unlike ns/op it counts the work of every goroutine, the background
// writers' included.
func SelfCPU(tb testing.TB) time.Duration {
	tb.Helper()
	d, err := OwnCPU()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// OwnCPU is the user and system CPU time this process has used so far
// (the load and abuse programs: load generator, emulators and callers).
func OwnCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// ProcessCPU is the user and system CPU time another process (a gateway
// the program started) has used so far, read from /proc/<pid>/stat in
// clock ticks of 10 ms; 0 where /proc is absent or the process is gone.
func ProcessCPU(pid int) time.Duration {
	// utime is the 14th field of the line, stime the 15th.
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procStat is /proc/<pid>/stat from its third field on (the state), nil
// where /proc is absent or the process is gone. The command name (field
// 2) may hold spaces, so the fields are counted from its closing
// parenthesis.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}
