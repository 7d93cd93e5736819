package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/hostile"
)

// The upstream framing rules through the real binary
// (docs/tools.md#upstream-requests-and-answers): every upstream request
// goes out at most once, and an answer with more than one Content-Length line is
// refused. The upstream is a raw TCP server (test/hostile) serving
// answers the Core emulator gave, byte for byte, so that only the
// misbehaviour under test differs from a genuine Core.

// upstreamCase is one toolset call and the native route it reads.
type upstreamCase struct {
	name   string
	route  string
	answer hostile.Answer
	bearer string
	tool   string
	args   map[string]any
}

// emulatorAnswers reads the demo's repository and its open pull
// request's diff evidence from the Core emulator, as Core answers them.
func emulatorAnswers(t *testing.T) []upstreamCase {
	t.Helper()
	emu, d := startDemoEmulator(t)
	repoRoute := "/api/v1/repos/" + d.Owner + "/" + d.PublicRepo
	diffRoute := fmt.Sprintf("%s/pulls/%d.diff", repoRoute, d.OpenPull)
	fetch := func(route, bearer string, keep ...string) hostile.Answer {
		req, err := http.NewRequest(http.MethodGet, emu.URL()+route, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the emulator's %s: %d, %v", route, resp.StatusCode, err)
		}
		h := http.Header{}
		for _, k := range keep {
			h[k] = resp.Header.Values(k)
		}
		return hostile.Answer{Status: http.StatusOK, Header: h, Body: body}
	}
	return []upstreamCase{
		{"anonymous read", repoRoute, fetch(repoRoute, "", "Content-Type"), "", "get_repository",
			map[string]any{"owner": d.Owner, "repo": d.PublicRepo}},
		{"diff evidence", diffRoute, fetch(diffRoute+"?binary=true&evidence=v1", d.ReaderToken, "Content-Type", "Cache-Control", "Accept-Ranges"),
			d.ReaderToken, diffTool, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull}},
	}
}

// byRoute answers each case's route with what answer makes of the case's
// native answer.
func byRoute(cases []upstreamCase, answer func(hostile.Answer) hostile.Behaviour) hostile.Behaviour {
	var out hostile.Behaviour = hostile.Respond(hostile.Answer{Status: http.StatusNotFound})
	for _, c := range cases {
		out = hostile.ByPath(c.route, answer(c.answer), out)
	}
	return out
}

// routeHits counts the requests the server read for route.
func routeHits(srv *hostile.Server, route string) int {
	n := 0
	for _, p := range srv.Paths() {
		if p == route {
			n++
		}
	}
	return n
}

// TestUpstreamRequestSentOnce: Core answers a call on a kept-alive
// connection and closes that connection on the next call's request
// without answering. The gateway does not send that request again: the
// second call is upstream_unavailable, and Core saw exactly two requests
// for two calls.
func TestUpstreamRequestSentOnce(t *testing.T) {
	cases := emulatorAnswers(t)
	srv := hostile.StartDropReused(t, byRoute(cases, hostile.Respond))
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": srv.URL()}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := gw.Connect(t, "/mcp/forgejo", c.bearer)
			if out, isErr := callTool(t, s, c.tool, c.args); isErr {
				t.Fatalf("first call: %v", out)
			}
			out, isErr := callTool(t, s, c.tool, c.args)
			if !isErr || errorCode(t, out) != "upstream_unavailable" {
				t.Fatalf("second call: %v, want upstream_unavailable", out)
			}
			if n := routeHits(srv, c.route); n != 2 {
				t.Fatalf("Core saw %d requests for two calls, want 2 (%q)", n, srv.Paths())
			}
		})
	}
}

// TestUpstreamOneContentLength: an answer carrying its true
// Content-Length twice, as two identical lines, is refused:
// evidence_framing for the diff, upstream_malformed for a read. The same
// answers with one line are read (TestUpstreamRequestSentOnce's first
// calls).
func TestUpstreamOneContentLength(t *testing.T) {
	cases := emulatorAnswers(t)
	srv := hostile.Start(t, byRoute(cases, func(a hostile.Answer) hostile.Behaviour { return hostile.Respond(hostile.TwoLengths(a)) }))
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": srv.URL()}})
	want := map[string]string{"anonymous read": "upstream_malformed", "diff evidence": "evidence_framing"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := gw.Connect(t, "/mcp/forgejo", c.bearer)
			out, isErr := callTool(t, s, c.tool, c.args)
			if !isErr || errorCode(t, out) != want[c.name] {
				t.Fatalf("got %v, want %s", out, want[c.name])
			}
			if text := mustJSON(t, out); strings.Contains(text, fmt.Sprint(len(c.answer.Body))) {
				t.Fatalf("the error quotes the header value: %s", text)
			}
			if n := routeHits(srv, c.route); n != 1 {
				t.Fatalf("Core saw %d requests, want 1", n)
			}
		})
	}
}
