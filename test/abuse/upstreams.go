package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// upstreams is the upstreams process (upstreams_serve.go) as the harness
// sees it: where the emulators are, what was seeded, and the questions it
// asks them. A question that cannot be answered is kept as the run's
// failure (failure) rather than returned, so the report's lines stay
// simple; run fails on it at the end.
type upstreams struct {
	upstreamsReady
	cmd    *exec.Cmd
	exited <-chan struct{}
	// stdin is the write end of the process's stdin: closing it stops the
	// process, and so does this process's exit, however it comes.
	stdin  *os.File
	client *http.Client

	mu  sync.Mutex
	err error
}

// startUpstreams starts the upstreams process on dir (created) and waits
// for its ready line. Its stderr is this process's.
func startUpstreams(dir string) (u *upstreams, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	u = &upstreams{cmd: exec.Command(exe), stdin: stdinW, client: &http.Client{Timeout: 30 * time.Second}}
	gatewaytest.TiedToParent(u.cmd)
	u.cmd.Env = append(os.Environ(), upstreamsEnv+"="+dir)
	u.cmd.Stdin, u.cmd.Stdout, u.cmd.Stderr = stdinR, stdoutW, os.Stderr
	err = u.cmd.Start()
	stdinR.Close() // the process holds its own descriptors
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nil, fmt.Errorf("start the upstreams process: %w", err)
	}
	u.exited = gatewaytest.Exited(u.cmd)
	defer func() {
		if err != nil {
			u.close()
		}
	}()
	line, err := gatewaytest.ReadyLine(stdoutR, 1<<20, 2*time.Minute)
	if err == nil {
		err = json.Unmarshal(line, &u.upstreamsReady)
	}
	if err != nil {
		return nil, fmt.Errorf("the upstreams process's ready line (its errors are on stderr above): %w", err)
	}
	return u, nil
}

// pid is the upstreams process's, for its CPU time.
func (u *upstreams) pid() int { return u.cmd.Process.Pid }

// servedCount is how many requests the emulators have timed so far.
func (u *upstreams) servedCount() int {
	var a servedAnswer
	u.get("/served?from=0&limit=0", &a)
	return a.Total
}

// servedSince are the emulators' own times for the requests after the
// first n, in order of completion.
func (u *upstreams) servedSince(n int) []time.Duration {
	var out []time.Duration
	for {
		var a servedAnswer
		if !u.get(fmt.Sprintf("/served?from=%d&limit=%d", n+len(out), maxServedAnswer), &a) {
			return out
		}
		for _, ns := range a.Nanoseconds {
			out = append(out, time.Duration(ns))
		}
		if len(a.Nanoseconds) < maxServedAnswer {
			return out
		}
	}
}

// forgejoMarked counts the Forgejo emulator's recorded requests carrying
// the bearer or query mark ("" for none).
func (u *upstreams) forgejoMarked(bearer, query string) markedRequests {
	var m markedRequests
	u.get("/forgejo/marked?"+url.Values{"bearer": {bearer}, "query": {query}}.Encode(), &m)
	return m
}

// resetForgejoRequests forgets the Forgejo emulator's recorded requests.
func (u *upstreams) resetForgejoRequests() {
	resp, err := u.client.Post(u.ControlURL+"/forgejo/reset", "", nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			err = fmt.Errorf("status %s", resp.Status)
		}
	}
	u.fail("POST /forgejo/reset", err)
}

// get decodes the control server's answer to path into v, and reports
// whether it could.
func (u *upstreams) get(path string, v any) bool {
	resp, err := u.client.Get(u.ControlURL + path)
	if err != nil {
		return u.fail(path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return u.fail(path, fmt.Errorf("status %s", resp.Status))
	}
	return u.fail(path, json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v))
}

// fail keeps the first question's error, and reports whether err is nil.
func (u *upstreams) fail(question string, err error) bool {
	if err == nil {
		return true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err = fmt.Errorf("ask the upstreams process %s: %w", question, err)
	}
	return false
}

// failure is the first question the upstreams process did not answer.
func (u *upstreams) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// close stops the process (its stdin closed, killed after 10 s) and waits
// for it.
func (u *upstreams) close() {
	gatewaytest.StopExited(u.cmd, u.exited, 10*time.Second, func() { u.stdin.Close() }, nil)
}
