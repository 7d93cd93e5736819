package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

// TestRunReportsBothPaths runs the load program for a moment: it must
// build and start the gateway, call both paths of every scenario (the
// anonymous call against the bare and the slowed emulator, a diff page,
// a fragment of each document) with
// valid answers (run fails on any other), and print a row with figures
// for each and their ratio. The figures themselves are for
// docs/performance.md, never asserted here.
func TestRunReportsBothPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	var out bytes.Buffer
	o := options{duration: 300 * time.Millisecond, concurrency: 2, latencyN: 20, maxN: 50, warmN: 5,
		names: []string{"anonymous", "diff page", "documents"}, gatewayEnv: []string{"GOGC=100"}, upstreamDelay: 900 * time.Microsecond}
	if err := run(&out, o); err != nil {
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
		`\| anonymous, upstream \+0\.9 ms \| direct \| [0-9.]+ ms \| `,
		`\| anonymous, upstream \+0\.9 ms \| gateway / direct \| [0-9.]+× \| `,
		`\| diff page \| direct \| `,
		`\| diff page \| gateway \| `,
		`\| diff page \| gateway / direct \| `,
		`\| document 200 KiB \(demo\) \| gateway \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| `,
		`\| document 64 KiB \| gateway / direct \| `,
		`\| document 256 KiB \| gateway / direct \| `,
		`\| document 1 MiB \| direct \| `,
		`\| document 1 MiB \| gateway \| `,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no row matching %s in:\n%s", row, report)
		}
	}
}
