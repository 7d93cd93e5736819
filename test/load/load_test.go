package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the load program when a run
// starts the bare proxy, as the program runs itself again for it.
func TestMain(m *testing.M) {
	serveBareProxyFromEnv()
	os.Exit(m.Run())
}

// TestRunReportsBothPaths runs the load program for a moment: it must
// build and start the gateway twice (the owned tools/call path on and
// off), call every path of every scenario at two worker counts (the
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
	o := options{duration: 300 * time.Millisecond, concurrency: []int{1, 2}, paths: []string{"owned", "sdk"}, rounds: 1, latencyN: 20, maxN: 50, warmN: 5,
		names: []string{"anonymous", "diff page", "documents"}, gatewayEnv: []string{"GOGC=100"}, upstreamDelay: 900 * time.Microsecond}
	if err := run(&out, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	if !bytes.Contains(out.Bytes(), []byte("gateway environment: GOGC=100")) {
		t.Errorf("the gateway's environment is not reported:\n%s", report)
	}
	for _, row := range []string{
		`\| anonymous \| direct \| 1 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| direct \| 2 \| +\| +\| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| gateway \| 1 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| gateway \(SDK path\) \| 2 \| +\| +\| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| gateway / direct \| \| [0-9.]+× \| \+-?[0-9.]+ ms \| [0-9.]+× \|`,
		`\| anonymous \| gateway \(SDK path\) / direct \| \| [0-9.]+× \| `,
		`\| anonymous \| gateway / gateway \(SDK path\) \| 2 \| [0-9.]+× \| \| [0-9.]+× \| [0-9.]+× \|`,
		`\| anonymous, upstream \+0\.9 ms \| direct \| 1 \| [0-9.]+ ms \| `,
		`\| anonymous, upstream \+0\.9 ms \| gateway / direct \| \| [0-9.]+× \| `,
		`\| anonymous, upstream \+0\.9 ms \| bare proxy \| 2 \| +\| +\| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous, upstream \+0\.9 ms \| bare proxy / direct \| \| [0-9.]+× \| `,
		`\| anonymous \| bare proxy \| 1 \| [0-9.]+ ms \| [0-9.]+ ms \| `,
		`\| diff page \| direct \| `,
		`\| diff page \| gateway \| `,
		`\| diff page \| gateway / direct \| `,
		`\| document 200 KiB \(demo\) \| gateway \| 1 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| `,
		`\| document 64 KiB \| gateway / direct \| `,
		`\| document 256 KiB \| gateway (\(SDK path\) )?/ direct \| `,
		`\| document 1 MiB \| direct \| `,
		`\| document 1 MiB \| gateway \(SDK path\) \| `,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no row matching %s in:\n%s", row, report)
		}
	}
	// The floor is the anonymous scenarios' only.
	if strings.Contains(report, "| diff page | bare proxy") || strings.Contains(report, "KiB | bare proxy") {
		t.Errorf("a bare proxy row outside the anonymous scenarios:\n%s", report)
	}
}

// TestBareProxy: the floor's proxy sends a request, its path, query,
// headers and body to the origin as it came, answers with the origin's
// status, headers and body, and refuses an origin that is not http.
func TestBareProxy(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.Host+" "+r.URL.RequestURI()+" "+r.Header.Get("Accept")+" "+string(body))
		w.WriteHeader(http.StatusTeapot)
		w.Write(bytes.Repeat([]byte("x"), 100<<10)) // more than one copy buffer
	}))
	defer origin.Close()
	h, err := newBareProxy(origin.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(h)
	defer proxy.Close()
	direct := target{name: "direct", req: func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, origin.URL+"/api/v1/repos/o/r?page=2", strings.NewReader("hello"))
		r.Header.Set("Accept", "application/json")
		return r
	}}
	resp, err := http.DefaultClient.Do(through(direct, proxy.URL, bareProxyName).req())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "POST " + strings.TrimPrefix(origin.URL, "http://") + " /api/v1/repos/o/r?page=2 application/json hello"
	if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Seen") != want || len(body) != 100<<10 {
		t.Fatalf("status %d, X-Seen %q (want %q), %d body bytes", resp.StatusCode, resp.Header.Get("X-Seen"), want, len(body))
	}
	for _, bad := range []string{"", "https://127.0.0.1:1", "127.0.0.1:1", "http://"} {
		if _, err := newBareProxy(bad); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
}

// TestRunAuditRounds runs the audit comparison for a moment: the audit
// path and the plain one take turns over two rounds, the audit gateway
// records every anonymous call (the run fails if it wrote none or dropped
// any), and the ratio row compares the two.
func TestRunAuditRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	var out bytes.Buffer
	o := options{duration: 200 * time.Millisecond, concurrency: []int{2}, paths: []string{"audit", "owned"}, rounds: 2, latencyN: 10, maxN: 50, warmN: 5,
		names: []string{"anonymous"}}
	if err := run(&out, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	for _, row := range []string{
		`2 rounds a path in turns`,
		`\| anonymous \| gateway \(audit\) \| 2 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ req/s \| [0-9]+ µs \| [0-9]+ µs \|`,
		`\| anonymous \| gateway \(audit\) / gateway \| 2 \| [0-9.]+× \| \| [0-9.]+× \| [0-9.]+× \|`,
		`gateway \(audit\): [1-9][0-9]* audit records written, none dropped`,
	} {
		if !regexp.MustCompile(row).MatchString(report) {
			t.Errorf("no row matching %s in:\n%s", row, report)
		}
	}
}

// TestGitHubMCPServerPathRefusals: the github-mcp-server path needs its
// binary and runs the bare anonymous scenario only, refused before anything
// starts.
func TestGitHubMCPServerPathRefusals(t *testing.T) {
	for _, o := range []options{
		{paths: []string{"owned", ghmcpPath}, names: []string{"anonymous"}},
		{paths: []string{"owned", ghmcpPath}, names: []string{"anonymous", "diff page"}, ghmcpBin: "/nonexistent"},
		{paths: []string{"owned", ghmcpPath}, names: []string{"anonymous"}, ghmcpBin: "/nonexistent", upstreamDelay: time.Millisecond},
	} {
		if err := run(io.Discard, o); err == nil || !strings.Contains(err.Error(), ghmcpPath) {
			t.Errorf("%+v: %v, want a refusal naming the path", o, err)
		}
	}
}

// TestFakeGitHub: the fake answers list_branches' route in GitHub's shape
// and fails the run on any other request.
func TestFakeGitHub(t *testing.T) {
	f, err := startFakeGitHub()
	if err != nil {
		t.Fatal(err)
	}
	defer f.srv.Close()
	resp, err := http.Get(f.url + "/api/v3/repos/demo/gateway/branches?page=1&per_page=30")
	if err != nil {
		t.Fatal(err)
	}
	var branches []struct {
		Name   string `json:"name"`
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	err = json.NewDecoder(resp.Body).Decode(&branches)
	resp.Body.Close()
	if err != nil || len(branches) != 2 || branches[0].Name != "main" || len(branches[0].Commit.SHA) != 40 {
		t.Fatalf("branches %+v, %v", branches, err)
	}
	if err := f.check(); err != nil {
		t.Fatalf("after the route only: %v", err)
	}
	resp, err = http.Get(f.url + "/api/v3/user")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := f.check(); err == nil || !strings.Contains(err.Error(), "GET /api/v3/user") {
		t.Fatalf("after another request: %v", err)
	}
}

// TestThroughputPaced: with a rate, the workers together start no more
// calls than the rate allows, however fast the target answers; without
// one they make as many as they can.
func TestThroughputPaced(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	tg := target{name: "t", ok: func([]byte) bool { return true }, req: func() *http.Request {
		r, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		return r
	}}
	n, d, err := throughput(srv.Client(), tg, 4, time.Second, 1_000_000, 200)
	if err != nil {
		t.Fatal(err)
	}
	// 200 a second for a second: the schedule's first start is at 0.
	if n < 150 || n > 201 {
		t.Errorf("paced at 200/s for %v: %d calls", d, n)
	}
	free, _, err := throughput(srv.Client(), tg, 4, time.Second, 1_000_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if free <= 2*n {
		t.Errorf("unpaced: %d calls, paced %d: pacing did not bind", free, n)
	}
}

// TestLatenciesTakeTurns pins the latency phase's rounds: each target's n
// calls are split into blocks taken in turns, each block after its own
// warm-up, and every measured call is one sample.
func TestLatenciesTakeTurns(t *testing.T) {
	var mu sync.Mutex
	var order strings.Builder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		order.WriteString(strings.TrimPrefix(r.URL.Path, "/"))
		mu.Unlock()
	}))
	defer srv.Close()
	// The handler writes order on the server's goroutines.
	calls := func() string {
		mu.Lock()
		defer mu.Unlock()
		return order.String()
	}
	named := func(name string) target {
		return target{name: name, ok: func([]byte) bool { return true }, req: func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, srv.URL+"/"+name, nil)
			return r
		}}
	}
	lats, err := latencies(srv.Client(), []target{named("a"), named("b")}, 7, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, lat := range lats {
		if len(lat) != 7 || !slices.IsSorted(lat) {
			t.Errorf("target %d: %d samples, sorted %v; want 7, sorted", i, len(lat), slices.IsSorted(lat))
		}
	}
	// Blocks of 3, 2 and 2 calls, each after one warm-up call.
	if got, want := calls(), "aaaabbbbaaabbbaaabbb"; got != want {
		t.Errorf("calls in the order %s, want %s", got, want)
	}
	// One round is the back-to-back phase of before.
	mu.Lock()
	order.Reset()
	mu.Unlock()
	if _, err := latencies(srv.Client(), []target{named("a"), named("b")}, 2, 1, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := calls(), "aaabbb"; got != want {
		t.Errorf("one round: calls in the order %s, want %s", got, want)
	}
}
