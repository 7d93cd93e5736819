package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

// TestRunReportsFaults runs a brief fault run so the command cannot rot:
// every fault is reported with its figures, and the run's assertions (no
// accepted call lost in the rolling restart, callers served again within
// 2 s of each dependency's return, no acknowledged row lost, no fault
// answered as the caller's doing) hold.
func TestRunReportsFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	var out bytes.Buffer
	o := options{stop: 2 * time.Second, outage: time.Second, settle: 3 * time.Second, baseline: time.Second, clients: 3, interval: 50 * time.Millisecond}
	err := run(&out, o)
	report := out.String()
	t.Log(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, fault := range []string{"rolling restart", "PostgreSQL restart", "PostgreSQL stopped 2s", "Redis stopped 2s",
		"SQLite disk full 1s", "Forgejo refusing 1s", "Forgejo hanging 1s", "Forgejo answering 502 1s"} {
		row := `(?m)^\| ` + regexp.QuoteMeta(fault) + ` \| [1-9][0-9]* \| [0-9]+ \| [0-9]+ \| [^|]+ \| [^|]+ \| 0 of [1-9][0-9]* \|$`
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no row for %q matching %s", fault, row)
		}
	}
}
