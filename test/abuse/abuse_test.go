package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestMain lets the test binary be the upstreams process too, as the run
// starts it (upstreams_serve.go).
func TestMain(m *testing.M) {
	serveUpstreamsIfAsked()
	os.Exit(m.Run())
}

// TestRunReportsAbuse runs a brief abuse run so the command cannot rot: it
// reports every measure, and the legitimate callers are all served during
// the attack.
func TestRunReportsAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	var out bytes.Buffer
	// Small bounds for the IPv6 attacker to meet in a brief run: an IP
	// ceiling above the legitimate diff caller's calls (one each 200 ms
	// for 4 s), and few refused bearers (legitimate callers send none);
	// and a total client metadata fetch rate the rotating flood meets.
	o := options{baseline: time.Second, attack: 3 * time.Second, slowConns: 60, floodCap: 300, interval: 200 * time.Millisecond,
		gatewayEnv: []string{"AGENT_GATEWAY_RATELIMIT_IP_CEILING_PER_MINUTE=25", "AGENT_GATEWAY_RATELIMIT_REFUSED_BEARERS_PER_MINUTE=10",
			"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_TOTAL_FETCHES_PER_MINUTE=20"}}
	if err := run(&out, o); err != nil {
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
		`\| client metadata fetches made for the one-address flood \(127\.0\.0\.67\) \| \| [1-9][0-9]*, within the bound of [0-9]+ `,
		`\| client metadata fetches made for both floods .* \| \| [1-9][0-9]* \(rotating [1-9][0-9]*\), within the bound of [0-9]+ `,
		`client metadata token/revoke .*429`,
		`Attack outcomes: slow bodies answered .*429`,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no line matching %s in:\n%s", row, report)
		}
	}
	// The IPv6 attacker's rotating addresses are one client: however many
	// requests it managed, no more got through than the /64's bounds for
	// the phase. Even a brief phase may straddle a minute boundary, where
	// the sliding window lets the last minute's rate pass again in part, so
	// the bound is the phase's (two windows), as the run itself prints.
	m := regexp.MustCompile(`IPv6 rotation from 2001:db8:6666:1::/64 .*, ([0-9]+) of them reached Forgejo .*ip_ceiling_per_minute [0-9]+ per /64, within the bound of ([0-9]+) for this phase\); ` +
		`made-up gateway bearers .*, ([0-9]+) store lookups .*refused_bearers_per_minute [0-9]+ per /64, within the bound of ([0-9]+) for this phase\)`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no IPv6 rotation line in:\n%s", report)
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	if n(m[1]) > n(m[2]) || n(m[3]) > n(m[4]) {
		t.Errorf("the IPv6 attacker got %s bearers to Forgejo (phase bound %s) and %s store lookups (phase bound %s)", m[1], m[2], m[3], m[4])
	}
}

// TestRunMultiAddress runs one brief multi-address scenario: 8
// addresses, half of them IPv6 /64s through the trusted proxy, fill the
// body budget and the in-flight bound with stalled work and flood
// registrations, while the legitimate callers (an OAuth token exchange
// among them) keep at least 99% served. Its p99 bound is reported, not
// asserted: timing is for the full run on a quiet machine.
func TestRunMultiAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	var out bytes.Buffer
	o := options{baseline: time.Second, interval: 200 * time.Millisecond, multi: []int{8}, multiPhase: 3 * time.Second, noLatencyBound: true}
	if err := run(&out, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	t.Log(report)
	for _, row := range []string{
		`(?m)^PASS: 8 addresses \(4 IPv4, 4 IPv6 /64s of 2001:db8:7777::/48\): legitimate [1-9][0-9]* calls, (99\.[0-9]|100\.0)% served, p99 [0-9.]+ ms \(baseline [0-9.]+ ms, bound [0-9.]+ ms, not enforced\)$`,
		`/oauth/register flood: .*oauth_clients \+[0-9]+, within the bound of [0-9]+ `,
		`stalled requests evicted so far \(agent_gateway_stalled_requests_evicted_total\): body_budget [0-9]+, in_flight [0-9]+`,
		// The emulators' own time beside the gateway's: every legitimate
		// call but the token exchange reaches one.
		`attacked: gateway p99 [0-9.]+ ms over [1-9][0-9]* calls, its upstreams' own p99 [0-9.]+ ms over [1-9][0-9]* requests \(a call's mean: [0-9.]+ ms in the gateway, [0-9.]+ ms of it in upstreams\);`,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no line matching %s in:\n%s", row, report)
		}
	}
}
