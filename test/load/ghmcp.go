package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// The github-mcp-server path, for the side-by-side figure: GitHub's own MCP
// server, cmd/github-mcp-server built by hand from its source (never part
// of this repository), served over Streamable HTTP with the repos toolset,
// read-only, against a loopback fake of GitHub's REST API. Its cheapest
// repos read, list_branches, is one REST GET and a short JSON answer, as
// the gateway's anonymous get_repository is one Forgejo GET: the load
// program sends both the same way, from the same workers, and reads each
// process's CPU the same way.
//
//	go build -o /tmp/github-mcp-server ./cmd/github-mcp-server   # in its checkout
//	go run ./test/load -scenarios anonymous -paths owned,github-mcp-server \
//	    -github-mcp-server /tmp/github-mcp-server -concurrency 1,8,64

// ghmcpPath names the path in -paths and in the report.
const ghmcpPath = "github-mcp-server"

// ghmcpToken is a fine-grained personal access token's shape: the server
// asks GitHub for a classic token's scopes (ghp_) before a call, and for
// this kind does not, so each call is its tool's one REST request.
const ghmcpToken = "github_pat_11LOADTEST0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN"

// fakeGitHub answers the one REST route list_branches uses, in GitHub's
// shape, and counts every other request: the run fails on any, since the
// figure would then not be the call's cost.
type fakeGitHub struct {
	srv        *http.Server
	url        string
	unexpected atomic.Int64
	lastOther  atomic.Value // string
}

// branchesAnswer is GET /repos/{owner}/{repo}/branches as GitHub answers
// it for a repository with two branches.
var branchesAnswer = func() []byte {
	type commit struct {
		SHA string `json:"sha"`
		URL string `json:"url"`
	}
	type branch struct {
		Name      string `json:"name"`
		Commit    commit `json:"commit"`
		Protected bool   `json:"protected"`
	}
	b, _ := json.Marshal([]branch{
		{Name: "main", Commit: commit{SHA: strings.Repeat("a1", 20), URL: "https://api.github.com/repos/demo/gateway/commits/" + strings.Repeat("a1", 20)}, Protected: true},
		{Name: "feature", Commit: commit{SHA: strings.Repeat("b2", 20), URL: "https://api.github.com/repos/demo/gateway/commits/" + strings.Repeat("b2", 20)}},
	})
	return b
}()

func startFakeGitHub() (*fakeGitHub, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeGitHub{url: "http://" + ln.Addr().String()}
	f.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/api/v3/repos/demo/gateway/branches" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Content-Length", strconv.Itoa(len(branchesAnswer)))
			_, _ = w.Write(branchesAnswer)
			return
		}
		f.unexpected.Add(1)
		f.lastOther.Store(r.Method + " " + r.URL.RequestURI())
		http.NotFound(w, r)
	})}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// check fails when the server asked the fake for anything but the route.
func (f *fakeGitHub) check() error {
	if n := f.unexpected.Load(); n > 0 {
		return fmt.Errorf("github-mcp-server made %d requests the fake GitHub does not answer (the last: %v)", n, f.lastOther.Load())
	}
	return nil
}

// startGitHubMCPServer runs bin's http command on a free loopback port
// against the fake, with the repos toolset read-only; its log (a few INFO
// lines a call, its default) is discarded.
func startGitHubMCPServer(bin string, fake *fakeGitHub, place *placement) (gatewayPath, func(), error) {
	addr, err := gatewaytest.FreeLoopbackAddr()
	if err != nil {
		return gatewayPath{}, nil, err
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "http", "--listen-host", host, "--port", port, "--gh-host", fake.url, "--toolsets", "repos", "--read-only")
	gatewaytest.TiedToParent(cmd)
	cmd.Env = gatewaytest.CleanEnv()
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := place.start(cmd); err != nil {
		return gatewayPath{}, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	gp := gatewayPath{name: ghmcpPath, url: "http://" + addr, pid: cmd.Process.Pid}
	for range 300 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return gp, stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return gatewayPath{}, nil, fmt.Errorf("%s did not listen on %s", bin, addr)
}

// ghmcpCall is list_branches on github-mcp-server, sent as the gateway's
// calls are.
func ghmcpCall(url string) target {
	return target{name: ghmcpPath, ok: okResult, req: mcpCallAt(url, "/", ghmcpToken, "list_branches", `{"owner":"demo","repo":"gateway"}`)}
}
