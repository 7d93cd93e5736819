package main

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
)

// scenarios are the Forgejo scenarios. With upstreamDelay > 0 the
// anonymous call is also run against an emulator that takes that long to
// answer (a FaultSlow on the repository route for both paths, set only
// while that scenario runs): the realistic forge beside the bare emulator.
func scenarios(emu *forgejoemu.Emulator, d *forgejoemu.Demo, gw string, upstreamDelay time.Duration) []scenario {
	repoPath := "/api/v1/repos/" + d.Owner + "/" + d.PublicRepo
	anonymous := func(name string) scenario {
		return scenario{
			name: name, floor: true,
			direct: target{name: "direct", ok: func(b []byte) bool { return bytes.Contains(b, []byte(`"full_name"`)) },
				req: func() *http.Request {
					r, _ := http.NewRequest(http.MethodGet, emu.URL()+repoPath, nil)
					r.Header.Set("Accept", "application/json")
					return r
				}},
			gateway: target{name: "gateway", ok: okResult,
				req: mcpCall(gw, "", "get_repository", fmt.Sprintf(`{"owner":%q,"repo":%q}`, d.Owner, d.PublicRepo))},
		}
	}
	out := []scenario{anonymous("anonymous")}
	if upstreamDelay > 0 {
		forge := anonymous(forgeScenario(upstreamDelay))
		forge.setup = func() { emu.SetFault(repoPath, forgejoemu.Fault{Kind: forgejoemu.FaultSlow, Delay: upstreamDelay}) }
		forge.teardown = func() { emu.SetFault(repoPath, forgejoemu.Fault{}) }
		out = append(out, forge)
	}
	return append(out,
		scenario{
			// One diff page: the direct path fetches the evidence entity (the
			// gateway verifies all of it on every page); the gateway path
			// returns page 0, verified and fitted.
			name: "diff page",
			direct: target{name: "direct", ok: func(b []byte) bool { return bytes.Contains(b, []byte(`"forgejo.pr-diff-evidence.v1"`)) },
				req: func() *http.Request {
					r, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s%s/pulls/%d.diff?binary=true&evidence=v1", emu.URL(), repoPath, d.OpenPull), nil)
					r.Header.Set("Accept", "application/json")
					r.Header.Set("Authorization", "Bearer "+d.ReaderToken)
					return r
				}},
			gateway: target{name: "gateway", ok: okResult,
				req: mcpCall(gw, d.ReaderToken, "get_pull_request_diff", fmt.Sprintf(`{"owner":%q,"repo":%q,"index":%d}`, d.Owner, d.PublicRepo, d.OpenPull))},
		})
}

// forgeScenario names the anonymous call against a slowed emulator.
func forgeScenario(delay time.Duration) string {
	return fmt.Sprintf("anonymous, upstream +%.1f ms", float64(delay)/float64(time.Millisecond))
}

// mcpCall returns a factory of tools/call requests to /mcp/forgejo.
func mcpCall(gw, bearer, tool, args string) func() *http.Request {
	return mcpCallAt(gw, "/mcp/forgejo", bearer, tool, args)
}

// mcpCallAt returns a factory of tools/call requests to an MCP endpoint.
func mcpCallAt(gw, endpoint, bearer, tool, args string) func() *http.Request {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
	return func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, gw+endpoint, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		// As a client sends it after initialize.
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		return r
	}
}

func okResult(b []byte) bool {
	return bytes.Contains(b, []byte(`"result"`)) && !bytes.Contains(b, []byte(`"isError":true`))
}
