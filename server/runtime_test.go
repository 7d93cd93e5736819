package server

import (
	"math"
	"testing"
)

func TestParseGCPercent(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"100", 100, false},
		{"0", 0, false},
		{"400", 400, false},
		{"off", gcPercentOff, false},
		{"OFF", gcPercentOff, false},
		{"-1", 0, true},
		{"", 0, true},
		{"50%", 0, true},
		{"1e3", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseGCPercent(tc.in)
			if (err != nil) != tc.wantErr || !tc.wantErr && got != tc.want {
				t.Fatalf("parseGCPercent(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
			if !tc.wantErr && formatGCPercent(got) != map[bool]string{true: "off", false: tc.in}[got < 0] {
				t.Errorf("formatGCPercent(%d) = %q", got, formatGCPercent(got))
			}
		})
	}
}

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		format  string
		wantErr bool
	}{
		{"24MiB", 24 << 20, "24MiB", false},
		{"1GiB", 1 << 30, "1GiB", false},
		{"2TiB", 2 << 40, "2TiB", false},
		{"512KiB", 512 << 10, "512KiB", false},
		{"1000", 1000, "1000B", false},
		{"1000B", 1000, "1000B", false},
		{"1536KiB", 1536 << 10, "1536KiB", false},
		{"off", math.MaxInt64, "off", false},
		{"0", 0, "", true},
		{"-5MiB", 0, "", true},
		{"MiB", 0, "", true},
		{"24MB", 0, "", true}, // GOMEMLIMIT has no decimal units
		{"24 MiB", 0, "", true},
		{"9000000TiB", 0, "", true}, // overflows int64
		{"", 0, "", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseMemoryLimit(tc.in)
			if (err != nil) != tc.wantErr || !tc.wantErr && got != tc.want {
				t.Fatalf("parseMemoryLimit(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
			if !tc.wantErr && formatMemoryLimit(got) != tc.format {
				t.Errorf("formatMemoryLimit(%d) = %q, want %q", got, formatMemoryLimit(got), tc.format)
			}
		})
	}
}

// TestApplyRuntimeEnvironmentWins: the configured policy is applied unless
// GOGC or GOMEMLIMIT is in the environment, each half on its own.
func TestApplyRuntimeEnvironmentWins(t *testing.T) {
	cfg := Default()
	cfg.GCPercent, cfg.MemoryLimit = 250, 40<<20
	for _, tc := range []struct {
		name               string
		env                map[string]string
		wantGC             int   // -2: not set
		wantLimit          int64 // -2: not set
		gcFrom, limitFrom  string
		gcShown, limitShow string
	}{
		{"configuration", nil, 250, 40 << 20, "runtime.gc_percent", "runtime.memory_limit", "250", "40MiB"},
		{"empty variables are unset", map[string]string{"GOGC": "", "GOMEMLIMIT": ""}, 250, 40 << 20, "runtime.gc_percent", "runtime.memory_limit", "250", "40MiB"},
		{"GOGC wins", map[string]string{"GOGC": "150"}, -2, 40 << 20, "GOGC", "runtime.memory_limit", "150", "40MiB"},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, 250, -2, "runtime.gc_percent", "GOMEMLIMIT", "250", "1GiB"},
		{"both win", map[string]string{"GOGC": "off", "GOMEMLIMIT": "off"}, -2, -2, "GOGC", "GOMEMLIMIT", "off", "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotGC, gotLimit := -2, int64(-2)
			tuner := runtimeTuner{
				setGCPercent:   func(n int) int { gotGC = n; return 100 },
				setMemoryLimit: func(n int64) int64 { gotLimit = n; return math.MaxInt64 },
			}
			p := applyRuntime(cfg, func(k string) string { return tc.env[k] }, tuner)
			if gotGC != tc.wantGC || gotLimit != tc.wantLimit {
				t.Errorf("set GC %d and limit %d, want %d and %d", gotGC, gotLimit, tc.wantGC, tc.wantLimit)
			}
			want := runtimePolicy{GCPercent: tc.gcShown, GCPercentFrom: tc.gcFrom, MemoryLimit: tc.limitShow, MemoryLimitFrom: tc.limitFrom}
			if p != want {
				t.Errorf("policy %+v, want %+v", p, want)
			}
		})
	}
}
