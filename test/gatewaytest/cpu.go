package gatewaytest

import (
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
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
