// Command agent-gateway is a remote MCP server that gives AI agents
// verified, authenticated, bounded access to a Forgejo forge and to
// allowlisted GitHub documents. See README.md.
package main

import (
	"os"

	"github.com/agent-gateway/agent-gateway/server"
)

func main() {
	os.Exit(server.Main(os.Args[1:], server.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
