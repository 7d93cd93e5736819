package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/server"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestCollectorPolicy runs the real binary with the runtime.* keys and
// reads the collector policy the Go runtime reports in /metrics
// (go_gc_gogc_percent, go_gc_gomemlimit_bytes): the defaults, the keys
// set by environment variable, and GOGC/GOMEMLIMIT in the process
// environment winning over the keys.
func TestCollectorPolicy(t *testing.T) {
	def := server.Default()
	for _, tc := range []struct {
		name      string
		env       map[string]string
		wantGOGC  int64
		wantLimit int64
		logged    string
	}{
		{"defaults", map[string]string{"GOGC": "", "GOMEMLIMIT": ""}, int64(def.GCPercent), def.MemoryLimit,
			`"gc_percent_from":"runtime.gc_percent"`},
		{"configured", map[string]string{"GOGC": "", "GOMEMLIMIT": "",
			"AGENT_GATEWAY_RUNTIME_GC_PERCENT": "275", "AGENT_GATEWAY_RUNTIME_MEMORY_LIMIT": "48MiB"}, 275, 48 << 20,
			`"memory_limit":"48MiB","memory_limit_from":"runtime.memory_limit"`},
		{"environment wins", map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB",
			"AGENT_GATEWAY_RUNTIME_GC_PERCENT": "275", "AGENT_GATEWAY_RUNTIME_MEMORY_LIMIT": "48MiB"}, 150, 1 << 30,
			`"gc_percent":"150","gc_percent_from":"GOGC","memory_limit":"1GiB","memory_limit_from":"GOMEMLIMIT"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := gatewaytest.Start(t, gatewaytest.Options{Env: tc.env})
			status, m := get(t, gw.URL+"/metrics")
			if status != 200 {
				t.Fatalf("/metrics: %d", status)
			}
			if got := gauge(t, m, "go_gc_gogc_percent"); got != tc.wantGOGC {
				t.Errorf("go_gc_gogc_percent = %d, want %d", got, tc.wantGOGC)
			}
			if got := gauge(t, m, "go_gc_gomemlimit_bytes"); got != tc.wantLimit {
				t.Errorf("go_gc_gomemlimit_bytes = %d, want %d", got, tc.wantLimit)
			}
			if !strings.Contains(gw.Logs(), tc.logged) {
				t.Errorf("the start-up log does not say %s:\n%s", tc.logged, gw.Logs())
			}
		})
	}
}

// gauge reads an unlabelled metric's value as an integer.
func gauge(t *testing.T, metrics, name string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s %q: %v", name, m[1], err)
	}
	return int64(f)
}
