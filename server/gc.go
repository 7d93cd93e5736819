package server

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent replaces Go's default of 100. The gateway's live heap is
// small (a few MiB: no caches, bounded windows), so at 100 the collector runs
// after every few requests; the MCP SDK's JSON decoding allocates ~300 KB per
// call (docs/performance.md). At 400 the heap stays a few tens of MiB and
// the collector's share of CPU drops by half. An operator's GOGC wins.
const defaultGCPercent = 400

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}
