package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// Stdio are the process's standard streams.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

const usage = `usage: agent-gateway [command] [flags]

commands:
  serve     run the gateway (default)
  stdio     serve the Forgejo catalog over stdin/stdout with the process's own credential
  demo      start an emulated Forgejo with sample data and the real gateway in front of it
  admin     manage projects, repositories, document sources, grants and tokens in the store
  diff      read a pull request's whole diff through the gateway and verify every page
  version   print the version

Run "agent-gateway <command> -h" for the flags of a command.
`

// Main runs one subcommand and returns the process exit code.
func Main(args []string, std Stdio) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, args, std)
	case "stdio":
		err = runStdio(ctx, args, std)
	case "demo":
		err = runDemo(ctx, args, std)
	case "admin":
		err = runAdmin(ctx, args, std)
	case "diff":
		return runDiff(ctx, args, std)
	case "version":
		fmt.Fprintln(std.Out, "agent-gateway", Version)
	case "help", "-h", "--help":
		fmt.Fprint(std.Out, usage)
	default:
		fmt.Fprintf(std.Err, "unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		var ce *ConfigError
		var ue *UsageError
		if errors.As(err, &ce) || errors.As(err, &ue) {
			fmt.Fprintln(std.Err, err)
			return 2
		}
		fmt.Fprintln(std.Err, "agent-gateway:", err)
		return 1
	}
}

// newLogger returns the JSON logger at the configured level.
// maxLoggedValue is the most bytes of any one log value or message; a
// panic's stack trace is the one longer value the gateway writes, and it
// is cut too (its head names the panic site).
const maxLoggedValue = 4096

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	// Every value is capped (the access log caps caller-sent fields at 128
	// bytes itself); this bounds whatever else could quote a caller.
	return slog.New(middleware.CapHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}), maxLoggedValue))
}

func runServe(ctx context.Context, args []string, std Stdio) error {
	loaded, err := Load(LoadOptions{Args: args, Stderr: std.Err})
	if err != nil {
		return err
	}
	if loaded.ConfigTest {
		return printConfig(std.Out, &loaded.Config)
	}
	return serveGateway(ctx, loaded.Config, std, nil, nil)
}

// serveGateway wires, listens and serves cfg until ctx ends. prepare, if
// set, runs on the wired gateway before it listens (the demo seeds its
// store there); announce, if set, once the listener is open.
func serveGateway(ctx context.Context, cfg Config, std Stdio, prepare func(*Gateway) error, announce func(addr string)) error {
	log := newLogger(std.Err, cfg.LogLevel)
	routeStdLog(log)
	logRuntime(log, applyRuntime(cfg, os.Getenv, debugTuner))
	g, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer g.Close()
	if prepare != nil {
		if err := prepare(g); err != nil {
			return err
		}
	}
	s, err := g.Listen()
	if err != nil {
		return err
	}
	stopPurge := g.startOAuthPurge(ctx)
	defer stopPurge() // before g.Close closes the store
	log.Info("listening", "addr", s.Addr().String(), "public_url", cfg.PublicURL, "version", Version)
	if announce != nil {
		announce(s.Addr().String())
	}
	return s.Serve(ctx)
}
