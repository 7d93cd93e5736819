// Package gatewaytest runs the real agent-gateway binary for end-to-end
// tests: it builds the binary once per test process (with the race
// detector), starts it on a free loopback port with a given environment,
// waits until it is ready, captures its logs, and connects the official MCP
// Go SDK client to it.
package gatewaytest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// build is one binary built at most once per test process.
type build struct {
	once sync.Once
	path string
	err  error
}

var shipped, demo, viaMake build

// Binary builds agent-gateway as it ships (with -race, no build tags) once
// per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	return shipped.get(t, goBuild())
}

// DemoBinary builds agent-gateway with -tags demo (and -race) once per test
// process and returns its path: the binary `go run . demo` ends up
// running, the only one that links the emulated upstreams.
func DemoBinary(t testing.TB) string {
	t.Helper()
	return demo.get(t, goBuild("-tags", "demo"))
}

// MakeBinary runs the README's `make build` (the Makefile's build rule,
// with BIN pointing into a scratch directory instead of bin/) once per
// test process and returns the binary: the one operators and scripts run.
func MakeBinary(t testing.TB) string {
	t.Helper()
	return viaMake.get(t, func(bin string) []string { return []string{"make", "build", "BIN=" + bin} })
}

// goBuild is the command line of a race-enabled go build with flags.
func goBuild(flags ...string) func(bin string) []string {
	return func(bin string) []string {
		return append(append([]string{"go", "build", "-race"}, flags...), "-o", bin, ".")
	}
}

// get runs the command line argv gives for the binary's path, in the
// module root, the first time it is called.
func (b *build) get(t testing.TB, argv func(bin string) []string) string {
	t.Helper()
	b.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "agent-gateway-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "agent-gateway")
		if b.err = touchSources(root); b.err != nil {
			return
		}
		args := argv(b.path)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// touchSources opens every file the binary may be built from (the tree
// without .git, test/, docs/, testdata and *_test.go files, so the
// Makefile too) and reads a byte of it. go test records the files a test
// opens in its cache key, and the go build above runs in another process,
// which it does not see: so without this, a test whose verdict depends on
// the binary (a golden contract, a refusal) would pass from the cache after
// the binary's source changed.
func touchSources(root string) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			if rel == ".git" || rel == "test" || rel == "docs" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		_, _ = f.Read(make([]byte, 1))
		return f.Close()
	})
}

// ModuleRoot finds the directory holding go.mod above the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Options describe one gateway process.
type Options struct {
	// Env are AGENT_GATEWAY_* (and other) variables; listen and data_dir
	// default to a free loopback port and a fresh temp directory.
	Env map[string]string
	// Args follow the subcommand ("serve" unless Command is set).
	Command string
	Args    []string
	// Canaries, when set, are scanned for in the process's logs, the MCP
	// responses its Connect sessions received and its /metrics when the
	// test ends (see Canaries).
	Canaries *Canaries
	// Binary runs another build than Binary's (the one `make build`
	// writes, say).
	Binary string
	// TLS, when set, is the client side of a gateway serving TLS itself
	// (tls.cert_file): URL is https:// and the start waits for /healthz
	// over TLS with this configuration.
	TLS *tls.Config
}

// Process is a running gateway.
type Process struct {
	URL       string
	DataDir   string
	cmd       *exec.Cmd
	logs      *SyncBuffer
	responses *SyncBuffer // response bodies of Connect sessions and Record
	canaries  *Canaries
	done      chan struct{}
	waitErr   error
	transport http.RoundTripper // the client side of URL: plain, or with Options.TLS

	// MetricsURL is where the whole /metrics exposition is: on
	// AGENT_GATEWAY_METRICS_LISTEN when the test set it, else on the API
	// listener (which then leaves out the store's row counts).
	MetricsURL string
}

// Start runs the gateway and waits for /healthz. The process is stopped
// (SIGTERM, then killed) at cleanup, and the test fails if its log shows a
// data race.
func Start(t testing.TB, o Options) *Process {
	t.Helper()
	bin := o.Binary
	if bin == "" {
		bin = Binary(t)
	}
	addr := FreeAddr(t)
	p := &Process{URL: "http://" + addr, DataDir: t.TempDir(), logs: &SyncBuffer{}, responses: &SyncBuffer{},
		canaries: o.Canaries, done: make(chan struct{}), transport: http.DefaultTransport}
	if o.TLS != nil {
		p.URL = "https://" + addr
		p.transport = &http.Transport{TLSClientConfig: o.TLS}
	}
	env := map[string]string{
		"AGENT_GATEWAY_LISTEN":   addr,
		"AGENT_GATEWAY_DATA_DIR": p.DataDir,
	}
	for k, v := range o.Env {
		env[k] = v
	}
	if env["AGENT_GATEWAY_RATELIMIT_REDIS_URL"] != "" && env[KeyPrefixEnv] == "" {
		env[KeyPrefixEnv] = KeyPrefix(t)
	}
	p.DataDir = env["AGENT_GATEWAY_DATA_DIR"] // the caller's, when it chose one
	p.MetricsURL = p.URL + "/metrics"
	if m := env["AGENT_GATEWAY_METRICS_LISTEN"]; m != "" {
		p.MetricsURL = "http://" + m + "/metrics"
	}
	cmdName := o.Command
	if cmdName == "" {
		cmdName = "serve"
	}
	p.cmd = exec.Command(bin, append([]string{cmdName}, o.Args...)...)
	p.cmd.Env = mergeEnv(env)
	p.cmd.Stdout = p.logs
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		var metrics string
		if p.canaries != nil {
			metrics = p.scrapeMetrics()
		}
		p.Stop()
		if p.canaries != nil {
			p.scan(t, metrics)
		}
		if strings.Contains(p.logs.String(), "WARNING: DATA RACE") {
			t.Errorf("data race in the gateway process:\n%s", p.logs.String())
		}
	})
	if err := p.waitHealthy(30 * time.Second); err != nil {
		t.Fatalf("gateway did not become healthy: %v\nlogs:\n%s", err, p.logs.String())
	}
	return p
}

// CleanEnv returns this process's environment minus any AGENT_GATEWAY_* or
// HEYAIRA_* variable, so a gateway started from a test or a tool sees only
// the configuration it is given.
func CleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENT_GATEWAY_") || strings.HasPrefix(kv, "HEYAIRA_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// EnvList is a flag.Value collecting repeated KEY=VALUE flags, such as
// the -gateway-env of the load and abuse programs.
type EnvList []string

func (e *EnvList) String() string { return strings.Join(*e, " ") }

// Set adds one KEY=VALUE, refusing anything without a key.
func (e *EnvList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	*e = append(*e, v)
	return nil
}

// mergeEnv returns CleanEnv plus env.
func mergeEnv(env map[string]string) []string {
	out := CleanEnv()
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func (p *Process) waitHealthy(limit time.Duration) error {
	health := &http.Client{Transport: p.transport}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("process exited: %v", p.waitErr)
		default:
		}
		resp, err := health.Get(p.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("timed out after %s", limit)
}

// Logs returns everything the process wrote so far.
func (p *Process) Logs() string { return p.logs.String() }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits for the process to exit, up to limit, and returns its error.
func (p *Process) Wait(limit time.Duration) (error, bool) {
	select {
	case <-p.done:
		return p.waitErr, true
	case <-time.After(limit):
		return nil, false
	}
}

// Stop sends SIGTERM and waits up to 30 s before killing.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, ok := p.Wait(30 * time.Second); !ok {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// StopCommand stops a started cmd the way its test chose (stop: a
// signal, closing its stdin), waits up to grace for it to exit, and then
// kills it (kill, or cmd.Process.Kill when nil) and waits again. It returns
// only once cmd.Wait has returned, so everything the process wrote has
// been copied and may be read.
func StopCommand(cmd *exec.Cmd, grace time.Duration, stop, kill func()) {
	StopExited(cmd, Exited(cmd), grace, stop, kill)
}

// Exited runs cmd.Wait, the one a started cmd may have, and returns a
// channel closed once it has returned: a test that must notice an early
// exit while it polls takes it at the start and stops the command with
// StopExited.
func Exited(cmd *exec.Cmd) <-chan struct{} {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return done
}

// StopExited is StopCommand for a cmd whose Wait runs already (Exited).
func StopExited(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration, stop, kill func()) {
	if kill == nil {
		kill = func() { _ = cmd.Process.Kill() }
	}
	stop()
	select {
	case <-exited:
	case <-time.After(grace):
		kill()
		<-exited
	}
}

// FreeAddr returns a free loopback host:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// FreeLoopbackAddr is FreeAddr for programs without a testing.TB (the load
// and abuse runs).
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Admin runs `bin admin args… --json` with env as the whole environment, as
// an operator seeds a store, and returns the JSON object it printed.
func Admin(bin string, env []string, args ...string) (map[string]any, error) {
	cmd := exec.Command(bin, append(append([]string{"admin"}, args...), "--json")...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("admin %s: %v\n%s", args[0], err, errb.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("admin %s: %v", args[0], err)
	}
	return m, nil
}

// Connect opens an MCP client session to path (e.g. "/mcp/forgejo") with
// an optional bearer token, using the official SDK's Streamable HTTP
// transport (over TLS with Options.TLS when the process serves it).
func (p *Process) Connect(t testing.TB, path, bearer string) *mcp.ClientSession {
	t.Helper()
	return ConnectThrough(t, p.URL+path, bearer, &recordingTransport{base: p.transport, into: p.responses})
}

// ConnectVersion is Connect negotiating protocol revision version (such
// as 2025-11-25) instead of the SDK client's latest.
func (p *Process) ConnectVersion(t testing.TB, path, bearer, version string) *mcp.ClientSession {
	t.Helper()
	return connect(t, p.URL+path, bearer, &recordingTransport{base: p.transport, into: p.responses}, version)
}

// ConnectURL is Connect for any endpoint URL.
func ConnectURL(t testing.TB, endpoint, bearer string) *mcp.ClientSession {
	t.Helper()
	return ConnectThrough(t, endpoint, bearer, http.DefaultTransport)
}

// ConnectThrough is ConnectURL over base (a proxy's TLS, a source address
// of the test's choosing).
func ConnectThrough(t testing.TB, endpoint, bearer string, base http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	return connect(t, endpoint, bearer, base, "")
}

// connect opens the session; version "" is the SDK client's latest.
func connect(t testing.TB, endpoint, bearer string, base http.RoundTripper, version string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: &bearerTransport{token: bearer, base: base}}
	client := mcp.NewClient(&mcp.Implementation{Name: "gatewaytest", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads: the
// log sink of a gateway (a process, or one built in the test's own) that
// the test reads while it writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Len is the number of bytes written so far: an offset from which String
// shows what was written since.
func (s *SyncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}
