package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is the user and system CPU time another process has used, read
// from /proc/<pid>/stat (clock ticks of 10 ms); 0 where /proc is absent.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name: utime is the 14th
	// field of the line, stime the 15th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is the CPU time this process (load generator and emulator) has
// used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perCall divides CPU time over the calls that used it.
func perCall(cpu time.Duration, calls int64) string {
	if calls == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f µs", float64(cpu)/float64(calls)/float64(time.Microsecond))
}
