package server

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// runDemo starts the Forgejo emulator with sample data (real git
// repositories in a temporary directory) and the real gateway in front of
// it, prints how to connect, and serves until interrupted. It accepts the
// same flags as serve; --listen picks the gateway's address.
func runDemo(ctx context.Context, args []string, std Stdio) error {
	loaded, err := Load(LoadOptions{Args: args, Stderr: std.Err})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "agent-gateway-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	emu, err := forgejoemu.Start(forgejoemu.Options{Dir: filepath.Join(tmp, "forgejo")})
	if err != nil {
		return fmt.Errorf("start the Forgejo emulator: %w", err)
	}
	defer emu.Close()
	demo, err := emu.SeedDemo()
	if err != nil {
		return err
	}
	cfg := loaded.Config
	origin, err := parseLoopbackOrigin(emu.URL())
	if err != nil {
		return err
	}
	cfg.ForgejoOrigin = origin
	if cfg.DataDir == Default().DataDir {
		cfg.DataDir = filepath.Join(tmp, "data")
	}
	return serveGateway(ctx, cfg, std, func(addr string) {
		printDemo(std, emu.URL(), cfg.PublicURL, demo)
	})
}

func printDemo(std Stdio, forgejoURL, publicURL string, d *forgejoemu.Demo) {
	endpoint := publicURL + "/mcp/forgejo"
	fmt.Fprintf(std.Out, `
agent-gateway demo is running.

  emulated Forgejo   %[1]s
                     public repository %[3]s/%[4]s with pull requests #%[5]d (open), #%[6]d (closed), #%[7]d (empty diff)
                     private repository %[3]s/%[8]s
  MCP endpoint       %[2]s
  landing page       %[9]s/
  a Forgejo token    %[10]s  (user %[11]s: read:repository, write:issue; emulated, for this demo only)

List the anonymous tools:

  curl -s %[2]s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'

Read a pull request:

  curl -s %[2]s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_pull_request","arguments":{"owner":"%[3]s","repo":"%[4]s","index":%[5]d}}}'

Connect an MCP client:

  claude mcp add --transport http forgejo %[2]s
  npx @modelcontextprotocol/inspector   (transport: Streamable HTTP, URL: %[2]s)

Stop with Ctrl-C.
`, forgejoURL, endpoint, d.Owner, d.PublicRepo, d.OpenPull, d.ClosedPull, d.EmptyPull, d.PrivateRepo, publicURL, d.ReaderToken, d.Reader)
}

// parseLoopbackOrigin parses the emulator's URL as an upstream origin.
func parseLoopbackOrigin(raw string) (*url.URL, error) {
	u, err := upstream.ParseOrigin(raw)
	if err != nil {
		return nil, fmt.Errorf("emulator origin %q: %w", raw, err)
	}
	return u, nil
}
