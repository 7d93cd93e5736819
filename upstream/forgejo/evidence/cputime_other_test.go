//go:build !linux

package evidence_test

import "time"

var start = time.Now()

// threadCPU falls back to wall time where no thread CPU clock is wired up.
func threadCPU() time.Duration { return time.Since(start) }

const cpuClock = "wall time"
