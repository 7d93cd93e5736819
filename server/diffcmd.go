package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/web"
)

// Exit codes of `agent-gateway diff`, for scripts.
const (
	diffExitVerified   = 0 // the whole diff verified (and, with -o, is in place)
	diffExitUnverified = 1 // a page or the whole diff failed verification, or the pull request moved
	// diffExitRefused: the reader refused — the command line, the token or
	// the endpoint before any call, or an answer outside its bounds (not
	// exactly a page of the contract, over the envelope, offsets that do
	// not advance, over --max-bytes, no bytes for --timeout).
	diffExitRefused  = 2
	diffExitUpstream = 3 // the endpoint, the tool or the output failed
)

// diffTokenEnv carries the bearer when --token-file is not given; a flag
// would put it in shell history and in ps.
const diffTokenEnv = "AGENT_GATEWAY_TOKEN"

const diffUsage = `usage: agent-gateway diff [--endpoint URL] [--token-file FILE] [-o FILE] [--manifest]
                          [--max-bytes N] [--timeout D] owner/repo#index

Reads a pull request's whole diff from the gateway's get_pull_request_diff,
page by page, and verifies every page and the whole diff against its
manifest (the diffread package). The bearer is read from --token-file or
AGENT_GATEWAY_TOKEN.

  stdout      the diff, page by page as each page verifies; trust it only if the exit code is 0
  -o FILE     the diff is written to a temporary file beside FILE, renamed to FILE only once
              the whole diff verified; nothing is left at FILE otherwise
  --manifest  print the verified manifest as JSON on stdout instead of the diff
              (the diff still goes to -o FILE when given)

Every answer must be exactly a page of the contract (no member repeated, in another
letter case or unknown), at most 49,000 bytes, and start where the previous page ended.

exit codes: 0 verified, 1 verification failed or the pull request moved (start again),
2 refused: usage, or an answer outside the reader's bounds (above, --max-bytes, --timeout),
3 the endpoint, the tool or the output failed

flags:
`

// runDiff is `agent-gateway diff`: the verified diff of one pull request.
// It returns the exit code itself, as the command has codes of its own.
func runDiff(ctx context.Context, args []string, std Stdio) int {
	fs := flag.NewFlagSet("agent-gateway diff", flag.ContinueOnError)
	fs.SetOutput(std.Err)
	fs.Usage = func() { fmt.Fprint(fs.Output(), diffUsage); fs.PrintDefaults() }
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080/mcp/forgejo", "the gateway's Forgejo MCP endpoint")
	tokenFile := fs.String("token-file", "", "file holding the Forgejo bearer (default: $"+diffTokenEnv+")")
	out := fs.String("o", "", "write the verified diff to this file (renamed into place only once verified)")
	manifest := fs.Bool("manifest", false, "print the verified manifest as JSON on stdout instead of the diff")
	maxBytes := fs.Int64("max-bytes", 0, "refuse a diff longer than this many bytes, before writing any (0: no limit)")
	timeout := fs.Duration("timeout", diffread.DefaultIdleTimeout,
		"give up when no byte came from the endpoint for this long, waiting for a page or within one; a page that keeps coming is never cut")
	usage := func(format string, a ...any) int {
		fmt.Fprintf(std.Err, "agent-gateway diff: "+format+"\n", a...)
		return diffExitRefused
	}
	parse := func(args []string) (int, bool) {
		switch err := parseCommandFlags(fs, args, std); {
		case errors.Is(err, flag.ErrHelp):
			return diffExitVerified, false
		case err != nil:
			fmt.Fprintln(std.Err, err)
			return diffExitRefused, false
		}
		return 0, true
	}
	// Flags may come before or after the pull request.
	if code, ok := parse(args); !ok {
		return code
	}
	var rest []string
	if fs.NArg() > 0 {
		pr := fs.Arg(0)
		if code, ok := parse(fs.Args()[1:]); !ok {
			return code
		}
		rest = append([]string{pr}, fs.Args()...)
	}
	if len(rest) != 1 {
		return usage("name exactly one pull request as owner/repo#index (see -h)")
	}
	target, err := diffread.ParseTarget(rest[0])
	if err != nil {
		return usage("%v", err)
	}
	if err := diffread.CheckEndpoint(*endpoint); err != nil {
		return usage("%v", err)
	}
	if *maxBytes < 0 {
		return usage("--max-bytes %d: want 0 (no limit) or a positive number of bytes", *maxBytes)
	}
	if *timeout <= 0 {
		return usage("--timeout %v: want a positive duration, e.g. 60s or 10m", *timeout)
	}
	token, err := diffToken(*tokenFile)
	if err != nil {
		return usage("%v", err)
	}
	opts := diffread.Options{Endpoint: *endpoint, Token: token, IdleTimeout: *timeout, MaxBytes: *maxBytes}
	bar := newDiffProgress(std.Err)
	if bar != nil {
		opts.Progress = bar.update
	}
	res, err := readDiff(ctx, opts, target, std.Out, *out, *manifest)
	if bar != nil {
		bar.finish() // before any message, on a line of its own
	}
	if err != nil {
		return diffFailure(std.Err, err, *out, *out == "" && !*manifest)
	}
	if *manifest {
		var b bytes.Buffer
		if err := json.Indent(&b, res.Manifest.Raw, "", "  "); err != nil {
			return diffFailure(std.Err, err, *out, false)
		}
		b.WriteString("\n")
		if _, err := std.Out.Write(b.Bytes()); err != nil {
			return diffFailure(std.Err, err, *out, false)
		}
	}
	return diffExitVerified
}

// readDiff reads into the output the flags chose: -o through a temporary
// file renamed only after the whole diff verified, else stdout (or
// nowhere, when stdout is for the manifest).
func readDiff(ctx context.Context, opts diffread.Options, target diffread.Target, stdout io.Writer, out string, manifest bool) (*diffread.Result, error) {
	if out == "" {
		w := stdout
		if manifest {
			w = io.Discard
		}
		return diffread.Read(ctx, opts, target, w)
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.partial")
	if err != nil {
		return nil, fmt.Errorf("create the output: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	res, err := diffread.Read(ctx, opts, target, f)
	if err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("write the output: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write the output: %w", err)
	}
	if err := os.Rename(f.Name(), out); err != nil {
		os.Remove(f.Name())
		keep = true // closed and removed already
		return nil, fmt.Errorf("put the output in place: %w", err)
	}
	keep = true
	return res, nil
}

// diffFailure reports a failure on stderr and returns its exit code;
// toStdout says the diff was being written to stdout.
func diffFailure(stderr io.Writer, err error, out string, toStdout bool) int {
	var ve *diffread.VerificationError
	var se *diffread.StaleError
	var be *diffread.BoundError
	code := diffExitUpstream
	switch {
	case errors.As(err, &be):
		code = diffExitRefused
	case errors.As(err, &ve) || errors.As(err, &se):
		code = diffExitUnverified
	}
	// The error can quote what the endpoint sent: control, bidirectional
	// and other invisible characters are escaped (web.Visible), so an
	// endpoint can neither drive the terminal nor make the text read as
	// something else.
	fmt.Fprintln(stderr, "agent-gateway diff:", web.Visible(err.Error()))
	if be != nil {
		if hint := boundHints[be.Bound]; hint != "" {
			fmt.Fprintln(stderr, "agent-gateway diff:", hint)
		}
	}
	switch {
	case toStdout:
		fmt.Fprintln(stderr, "agent-gateway diff: the diff is NOT verified; discard what was written to stdout")
	case out != "":
		fmt.Fprintf(stderr, "agent-gateway diff: nothing was written to %s\n", out)
	}
	return code
}

// boundHints say what to do about a refusal at a bound the command line
// sets.
var boundHints = map[diffread.Bound]string{
	diffread.BoundIdle: "the gateway answers a page only once it fetched and verified the whole diff; " +
		"for a very large diff, give it longer with --timeout",
	diffread.BoundMaxBytes: "the diff is longer than --max-bytes; raise it to read this diff",
}

// diffToken reads the bearer from the file, or else the environment.
func diffToken(file string) (string, error) {
	raw, from := os.Getenv(diffTokenEnv), "$"+diffTokenEnv
	if file != "" {
		b, err := readFileBounded(file, maxSecretFileBytes)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		raw, from = string(b), "token file "+file
	}
	tok := strings.TrimSpace(raw)
	if tok == "" {
		return "", fmt.Errorf("no token: put the Forgejo bearer in a file named by --token-file, or in $%s", diffTokenEnv)
	}
	for _, r := range tok {
		if r <= ' ' || r == 0x7f {
			return "", fmt.Errorf("%s: the token contains whitespace or control characters", from)
		}
	}
	return tok, nil
}

// diffProgress is the progress bar on a terminal's stderr: pages, bytes
// and rate.
type diffProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

// newDiffProgress returns a progress bar when stderr is a terminal, and
// nil otherwise: scripts and logs get no control characters.
func newDiffProgress(stderr io.Writer) *diffProgress {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &diffProgress{w: f}
}

func (d *diffProgress) update(p diffread.Progress) {
	if d.bar == nil {
		if p.Total <= 0 {
			return
		}
		d.bar = progressbar.NewOptions64(p.Total,
			progressbar.OptionSetWriter(d.w),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30))
	}
	d.bar.Describe(fmt.Sprintf("verified page %d", p.Pages))
	_ = d.bar.Set64(p.Bytes)
}

// finish leaves the bar's last state (how far the read got) on its own
// line.
func (d *diffProgress) finish() {
	if d.bar != nil {
		_ = d.bar.Exit()
		fmt.Fprintln(d.w)
	}
}
