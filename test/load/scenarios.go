package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
)

func scenarios(emu *forgejoemu.Emulator, d *forgejoemu.Demo, gw string) []scenario {
	repoPath := "/api/v1/repos/" + d.Owner + "/" + d.PublicRepo
	return []scenario{
		{
			name: "anonymous",
			direct: target{name: "direct", ok: func(b []byte) bool { return bytes.Contains(b, []byte(`"full_name"`)) },
				req: func() *http.Request {
					r, _ := http.NewRequest(http.MethodGet, emu.URL()+repoPath, nil)
					r.Header.Set("Accept", "application/json")
					return r
				}},
			gateway: target{name: "gateway", ok: okResult,
				req: mcpCall(gw, "", "get_repository", fmt.Sprintf(`{"owner":%q,"repo":%q}`, d.Owner, d.PublicRepo))},
		},
		{
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
		},
	}
}

// mcpCall returns a factory of tools/call requests.
func mcpCall(gw, bearer, tool, args string) func() *http.Request {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
	return func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, gw+"/mcp/forgejo", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		return r
	}
}

func okResult(b []byte) bool {
	return bytes.Contains(b, []byte(`"result"`)) && !bytes.Contains(b, []byte(`"isError":true`))
}

func moduleRoot() string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return strings.TrimSpace(ln.Addr().String())
}
