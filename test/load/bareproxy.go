package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// The bare proxy is the floor under the gateway's latency: one more HTTP
// hop through a process of its own, with net/http's server and transport
// and nothing else (no MCP, no JSON, no checks). On a machine where waking
// an idle process is dear, a hop alone costs a large part of what the
// gateway's p50 adds over the direct call; printing the proxy's row beside
// the gateway's says how much of that ratio is the hop and how much the
// gateway's own work. It is this program run again, in its own process,
// as the gateway is: a proxy inside the load generator would share its
// runtime and never wake a second process.

// bareProxyEnv, when set in this program's environment, makes it the bare
// proxy to the origin it names instead of a load run.
const bareProxyEnv = "LOAD_BARE_PROXY_ORIGIN"

// bareProxyName names the proxy's rows in the report.
const bareProxyName = "bare proxy"

// serveBareProxyFromEnv runs the bare proxy and does not return when
// bareProxyEnv is set; otherwise it returns at once.
func serveBareProxyFromEnv() {
	origin := os.Getenv(bareProxyEnv)
	if origin == "" {
		return
	}
	if err := serveBareProxy(origin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load: bare proxy:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveBareProxy listens on a loopback port, writes its URL as one line to
// announce, and serves newBareProxy(origin) there.
func serveBareProxy(origin string, announce io.Writer) error {
	proxy, err := newBareProxy(origin)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(announce, "http://%s\n", ln.Addr())
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// newBareProxy forwards every request to origin with
// httputil.ReverseProxy: kept-alive connections, pooled copy buffers, no
// compression, as the gateway's own transport has.
func newBareProxy(origin string) (http.Handler, error) {
	to, err := url.Parse(origin)
	if err != nil {
		return nil, err
	}
	if to.Scheme != "http" || to.Host == "" {
		return nil, fmt.Errorf("the bare proxy's origin %q is not an http origin", origin)
	}
	return &httputil.ReverseProxy{
		Rewrite:    func(r *httputil.ProxyRequest) { r.SetURL(to) },
		Transport:  &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true},
		BufferPool: &copyBuffers{},
	}, nil
}

// copyBuffers is the proxy's httputil.BufferPool: without one it
// allocates 32 KiB for each answer it copies.
type copyBuffers struct{ pool sync.Pool }

func (b *copyBuffers) Get() []byte {
	if p, ok := b.pool.Get().(*[]byte); ok {
		return *p
	}
	return make([]byte, 32<<10)
}

func (b *copyBuffers) Put(buf []byte) { b.pool.Put(&buf) }

// startBareProxy runs this program again as the bare proxy to origin, on
// the servers' CPUs with a placement.
func startBareProxy(origin string, place *placement) (gatewayPath, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return gatewayPath{}, nil, err
	}
	cmd := exec.Command(self)
	gatewaytest.TiedToParent(cmd)
	cmd.Env = append(gatewaytest.CleanEnv(), bareProxyEnv+"="+origin)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return gatewayPath{}, nil, err
	}
	if err := place.start(cmd); err != nil {
		return gatewayPath{}, nil, fmt.Errorf("start the bare proxy: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	line, err := gatewaytest.ReadyLine(stdout, 256, time.Minute)
	if err != nil || !strings.HasPrefix(string(line), "http://127.0.0.1:") {
		stop()
		return gatewayPath{}, nil, fmt.Errorf("the bare proxy did not announce its address: %q, %v", line, err)
	}
	return gatewayPath{name: bareProxyName, url: string(line), pid: cmd.Process.Pid}, stop, nil
}

// through is t sent to the proxy at proxyURL instead of its own origin.
func through(t target, proxyURL, name string) target {
	to, _ := url.Parse(proxyURL)
	return target{name: name, ok: t.ok, req: func() *http.Request {
		r := t.req()
		r.URL.Scheme, r.URL.Host, r.Host = to.Scheme, to.Host, ""
		return r
	}}
}
