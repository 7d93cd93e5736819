package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

// TestRunReportsAbuse runs a brief abuse run so the command cannot rot: it
// reports every measure, and the legitimate callers are all served during
// the attack.
func TestRunReportsAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	var out bytes.Buffer
	if err := run(&out, options{baseline: time.Second, attack: 3 * time.Second, slowConns: 60, floodCap: 300, interval: 200 * time.Millisecond}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	t.Log(report)
	for _, row := range []string{
		`\| legitimate calls \| [1-9][0-9]* \| [1-9][0-9]* \|`,
		`\| legitimate success rate \| 100\.0% \| 100\.0% \|`,
		`\| legitimate p99 \| [0-9.]+ ms \| [0-9.]+ ms \|`,
		`\| gateway RSS \| [0-9.]+ MiB \| peak [0-9.]+ MiB \(VmHWM [0-9.]+ MiB\), [0-9.]+ MiB 2 s after \|`,
		`\| log bytes written \| [0-9]+ \| [0-9]+ \|`,
		`\| upstream requests made for the attacker \| \| [0-9]+ \(made-up bearers [0-9]+, anonymous searches [0-9]+\) \|`,
		`\| rows added to the store \| \| [0-9]+ `,
		`\| client metadata fetches made for the attacker \| \| [0-9]+, within the bound of [0-9]+ `,
		`client metadata token/revoke .*429`,
		`Attack outcomes: slow bodies answered .*429`,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no line matching %s in:\n%s", row, report)
		}
	}
}
