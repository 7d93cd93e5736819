//go:build !demo

package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// modulePath is this module's path, as go.mod declares it.
const modulePath = "github.com/agent-gateway/agent-gateway"

// demoBuildingLine is what the first run says, at once, before it
// compiles: the demo links code the shipped binary does not, so its first
// start waits for a compile.
const demoBuildingLine = "building the demo (first run compiles; later runs start in seconds)…"

// runDemo, in a binary built without the demo tag, holds no emulator: the
// emulated Forgejo, GitHub and OpenID provider are test doubles under
// test/, and linking them would ship zitadel/oidc, go-jose, httptest and
// the evidence test writer in every production binary. So `go run . demo`,
// the README's first command, lands here. It builds the demo binary (the
// same gateway with demo.go and the emulators linked) once per source
// state into the user's cache directory (demoBuild), saying so on stderr
// before it compiles, and replaces itself (exec, same PID, streams and
// signals) with that binary in the module root. A later run whose sources
// are unchanged execs the cached binary without running the go command's
// build at all. Outside a source checkout there is nothing to build the
// demo from, and the error says so.
func runDemo(ctx context.Context, args []string, std Stdio) error {
	// --help and --config-test answer here, before any build: the flags
	// and the configuration are the same in both builds.
	if done, err := demoPreflight(args, std); done || err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("demo: the demo is built from source with the go command, which is not on PATH: %w", err)
	}
	b, err := planDemoBuild(ctx, root, goBin)
	if err != nil {
		return err
	}
	if !b.fresh() {
		fmt.Fprintln(std.Err, demoBuildingLine)
		start := time.Now()
		if err := b.build(ctx, std.Err); err != nil {
			return err
		}
		fmt.Fprintf(std.Err, "built the demo in %.1f s: %s\n", time.Since(start).Seconds(), b.bin)
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	return syscall.Exec(b.bin, demoArgv(b.bin, args), os.Environ())
}

// demoArgv is the command line the demo binary runs with: the user's own
// flags after the subcommand, never before it.
func demoArgv(bin string, args []string) []string {
	return append([]string{bin, "demo"}, args...)
}

// errNoCheckout is moduleRoot's answer outside a source checkout.
var errNoCheckout = errors.New("demo: this binary is built without the emulated upstreams; " +
	"run `go run . demo` in a source checkout of " + modulePath + " (it builds them in with -tags demo)")

// moduleRoot returns the nearest directory at or above dir whose go.mod
// declares this module, or errNoCheckout.
func moduleRoot(dir string) (string, error) {
	for {
		if declaresModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNoCheckout
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod file at path names this module.
// It reads at most the first 64 KiB: the module line comes first.
func declaresModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "module "); ok {
			return strings.Trim(strings.TrimSpace(name), `"`) == modulePath
		}
	}
	return false
}
