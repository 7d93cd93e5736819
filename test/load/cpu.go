package main

import (
	"fmt"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// selfCPU is the CPU time this process (load generator and emulator) has
// used; 0 if it cannot be read.
func selfCPU() time.Duration {
	d, _ := gatewaytest.OwnCPU()
	return d
}

// perCall divides CPU time over the calls that used it.
func perCall(cpu time.Duration, calls int64) string {
	if calls == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f µs", float64(cpu)/float64(calls)/float64(time.Microsecond))
}
