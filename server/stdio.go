package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store/audit"
)

// runStdio serves the Forgejo toolset over stdin/stdout. Its caller is the
// local process owner, so it uses the process's own configured credential
// (docs/architecture.md#flow-stdio-session: "stdio retains its existing
// own-token or Basic-auth configuration"); without one only the anonymous
// tools are offered. Logs go to stderr: stdout carries the protocol. It wires
// only the Forgejo toolset (newForgejoGateway): no store, no cursor secret,
// so it creates no data_dir wherever a client launches it, unless
// audit.mode asks for the audit record, which needs both.
func runStdio(ctx context.Context, args []string, std Stdio) error {
	loaded, err := Load(LoadOptions{Command: "stdio", Args: args, Stdout: std.Out, Stderr: std.Err})
	if err != nil {
		return err
	}
	cfg := loaded.Config
	log := startLogging(cfg, std)
	g := newForgejoGateway(cfg, log)
	defer g.Close()
	if err := g.wireStdioAudit(ctx); err != nil {
		return err
	}
	cred, err := processCredential(cfg)
	if err != nil {
		return err
	}
	var srv *mcp.Server
	if cred.IsZero() {
		srv = g.forgejoC.Server(func(t toolset.Tool) bool { return t.Policy.Anonymous }, log)
	} else {
		srv = g.forgejoC.Server(nil, log)
		ctx = middleware.WithPrincipal(ctx, middleware.NewProcessPrincipal(cred))
	}
	return toolset.RunStdio(ctx, srv, std.In, nopWriteCloser{std.Out})
}

// processCredential reads the stdio process's own Forgejo credential from
// the environment or the configured files.
func processCredential(cfg Config) (middleware.Credential, error) {
	var c middleware.Credential
	c.Token = cfg.ForgejoToken
	if cfg.ForgejoTokenFile != "" {
		b, err := readFileBounded(cfg.ForgejoTokenFile, maxSecretFileBytes)
		if err != nil {
			return c, fmt.Errorf("forgejo.token_file: %w", err)
		}
		c.Token = strings.TrimSpace(string(b))
	}
	c.Username, c.Password = cfg.ForgejoUsername, cfg.ForgejoPassword
	if cfg.ForgejoPassFile != "" {
		b, err := readFileBounded(cfg.ForgejoPassFile, maxSecretFileBytes)
		if err != nil {
			return c, fmt.Errorf("forgejo.password_file: %w", err)
		}
		c.Password = strings.TrimRight(string(b), "\r\n")
	}
	if c.Token != "" && c.Username != "" {
		return c, fmt.Errorf("forgejo: configure a token or Basic credentials, not both")
	}
	return c, nil
}

// wireStdioAudit opens the store and starts the audit record when
// audit.mode is on: the calls of a stdio session are recorded like those
// over HTTP (docs/audit.md), in the store and data_dir the gateway is
// configured with.
func (g *Gateway) wireStdioAudit(ctx context.Context) error {
	if g.cfg.AuditMode == "" || g.cfg.AuditMode == audit.Off {
		return nil
	}
	st, err := openStore(ctx, g.cfg)
	if err != nil {
		return err
	}
	g.store = st
	g.closers = append(g.closers, st.Close)
	return g.wireAudit()
}
