package server

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/server/admin"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/audit"
)

// UsageError is a command line refused before anything runs (the admin
// CLI's); Main exits 2 on it.
type UsageError = admin.UsageError

// openConfiguredStore is admin's OpenStore: the configuration Load reads
// from those arguments and the environment, and the store it names.
func openConfiguredStore(ctx context.Context, loadArgs []string, stderr io.Writer) (store.Store, error) {
	loaded, err := Load(LoadOptions{Args: loadArgs, Stderr: stderr})
	if err != nil {
		return nil, err
	}
	return openStore(ctx, loaded.Config)
}

// configuredAuditKey is admin's AuditKey: the public half of the audit
// signing key in the configured data_dir.
func configuredAuditKey(loadArgs []string, stderr io.Writer) (ed25519.PublicKey, error) {
	loaded, err := Load(LoadOptions{Args: loadArgs, Stderr: stderr})
	if err != nil {
		return nil, err
	}
	return audit.ReadPublicKey(loaded.Config.DataDir)
}

// Stdio are the process's standard streams.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// subcommand is one command of the CLI and its one-line summary, which
// both the top-level usage and the command's own --help print.
type subcommand struct{ name, summary string }

// subcommands are the CLI's commands, in the order usage lists them.
var subcommands = []subcommand{
	{"serve", "run the gateway (the default command)"},
	{"demo", "start an emulated Forgejo, GitHub and OpenID provider with sample data and the real gateway in front of them"},
	{"stdio", "serve the Forgejo toolset over stdin/stdout with the process's own credential"},
	{"admin", "manage projects, repositories, document sources, consents and tokens in the store"},
	{"diff", "read a pull request's whole diff through the gateway and verify every page"},
	{"version", "print the version"},
	{"help", "print this list"},
}

// summaryOf returns a subcommand's one-line summary.
func summaryOf(name string) string {
	for _, c := range subcommands {
		if c.name == name {
			return c.summary
		}
	}
	return ""
}

// usage is what `agent-gateway --help` prints.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: agent-gateway [command] [flags]\n\ncommands:\n")
	for _, c := range subcommands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun \"agent-gateway <command> --help\" for the flags of a command; \"agent-gateway --version\" prints the version.\n")
	return b.String()
}

// Main runs one subcommand and returns the process exit code.
func Main(args []string, std Stdio) int {
	cmd := "serve"
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "-h" || a == "-help" || a == "--help":
			cmd, args = "help", args[1:]
		case a == "-version" || a == "--version":
			cmd, args = "version", args[1:]
		case len(a) > 0 && a[0] != '-':
			cmd, args = a, args[1:]
		}
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
		err = admin.Run(ctx, args, std.Out, std.Err, admin.Target{OpenStore: openConfiguredStore, Scopes: documentsScopes(), AuditKey: configuredAuditKey})
	case "diff":
		return runDiff(ctx, args, std)
	case "version":
		err = runVersion(args, std)
	case "help":
		fmt.Fprint(std.Out, usage())
	default:
		fmt.Fprintf(std.Err, "unknown command %q\n\n%s", cmd, usage())
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

// runVersion is `agent-gateway version`: the version and the Go release
// the binary was built with.
func runVersion(args []string, std Stdio) error {
	fs := newCommandFlags("version")
	if err := parseCommandFlags(fs, args, std); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &UsageError{Msg: fmt.Sprintf("version: unexpected argument %q", fs.Arg(0))}
	}
	fmt.Fprintln(std.Out, "agent-gateway", Version, runtime.Version())
	return nil
}

// newCommandFlags is the flag set of one subcommand: its --help names the
// command and its summary before the flags.
func newCommandFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("agent-gateway "+name, flag.ContinueOnError)
	fs.Usage = func() {
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		flags := ""
		if hasFlags {
			flags = " [flags]"
		}
		fmt.Fprintf(fs.Output(), "usage: agent-gateway %s%s\n\n%s\n", name, flags, summaryOf(name))
		if hasFlags {
			fmt.Fprint(fs.Output(), "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseCommandFlags parses a subcommand's flags: usage on stdout when
// asked for, a *UsageError otherwise (admin.ParseFlags).
func parseCommandFlags(fs *flag.FlagSet, args []string, std Stdio) error {
	return admin.ParseFlags(fs, args, std.Out, std.Err)
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
	loaded, err := Load(LoadOptions{Command: "serve", Args: args, Stdout: std.Out, Stderr: std.Err})
	if err != nil {
		return err
	}
	if loaded.ConfigTest {
		return printConfig(std.Out, &loaded.Config)
	}
	return serveGateway(ctx, loaded.Config, std, nil, nil)
}

// openGateway is how every command that runs the gateway starts it: the
// logger writes to std.Err at cfg's level, the standard library's log is
// routed through it, the collector policy (runtime.*) is applied and
// logged, and the gateway is wired with it (g.log). The caller closes the
// gateway.
func openGateway(ctx context.Context, cfg Config, std Stdio) (*Gateway, error) {
	return New(ctx, cfg, startLogging(cfg, std))
}

// startLogging is the process set-up every command that runs the gateway
// shares: the JSON logger on std.Err at cfg's level, the standard
// library's log routed through it, and the collector policy (runtime.*)
// applied and logged.
func startLogging(cfg Config, std Stdio) *slog.Logger {
	log := newLogger(std.Err, cfg.LogLevel)
	routeStdLog(log)
	logRuntime(log, applyRuntime(cfg, os.Getenv, debugTuner))
	return log
}

// serveGateway wires, listens and serves cfg until ctx ends. prepare, if
// set, runs on the wired gateway before it listens (the demo seeds its
// store there); announce, if set, once the listener is open.
func serveGateway(ctx context.Context, cfg Config, std Stdio, prepare func(*Gateway) error, announce func(addr string)) error {
	g, err := openGateway(ctx, cfg, std)
	if err != nil {
		return err
	}
	defer g.Close()
	log := g.log
	if prepare != nil {
		if err := prepare(g); err != nil {
			return err
		}
	}
	s, err := g.Listen()
	if err != nil {
		return err
	}
	stopPurges := g.startPurges(ctx)
	defer stopPurges() // before g.Close closes the store
	stopHeadroom := g.startBodyHeadroom(ctx, os.Getenv, debugTuner)
	defer stopHeadroom()
	g.logUsableEndpoints(log)
	if cfg.TrustAllForwarded {
		log.Warn(trustAllWarning(cfg.TrustedProxies))
	}
	log.Info("listening", "addr", s.Addr().String(), "public_url", cfg.PublicURL, "version", Version)
	if announce != nil {
		announce(s.Addr().String())
	}
	return s.Serve(ctx)
}
