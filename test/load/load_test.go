package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

// TestRunReportsBothPaths runs the load program for a moment: it must
// build and start the gateway, call both paths of both scenarios with
// valid answers (run fails on any other), and print a row with figures
// for each and their ratio. The figures themselves are for
// docs/performance.md, never asserted here.
func TestRunReportsBothPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	var out bytes.Buffer
	if err := run(&out, 300*time.Millisecond, 2, 20, 50, []string{"anonymous", "diff page"}, []string{"GOGC=100"}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	if !bytes.Contains(out.Bytes(), []byte("gateway environment: GOGC=100")) {
		t.Errorf("the gateway's environment is not reported:\n%s", report)
	}
	for _, row := range []string{
		`\| anonymous \| direct \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| gateway \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| gateway / direct \| [0-9.]+× \| \+-?[0-9.]+ ms \| [0-9.]+× \|`,
		`\| diff page \| direct \| `,
		`\| diff page \| gateway \| `,
		`\| diff page \| gateway / direct \| `,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no row matching %s in:\n%s", row, report)
		}
	}
}
