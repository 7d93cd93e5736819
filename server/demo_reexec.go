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
)

// modulePath is this module's path, as go.mod declares it.
const modulePath = "github.com/agent-gateway/agent-gateway"

// runDemo, in a binary built without the demo tag, holds no emulator: the
// emulated Forgejo, GitHub and OpenID provider are test doubles under
// test/, and linking them would ship zitadel/oidc, go-jose, httptest and
// the evidence test writer in every production binary. So `go run . demo`,
// the README's first command, lands here and replaces itself (exec, same
// PID, streams and signals) with `go run -tags demo . demo <args>` in the
// module root, which builds the same gateway with demo.go and the emulators
// linked. Outside a source checkout there is nothing to build the demo
// from, and the error says so.
func runDemo(_ context.Context, args []string, _ Stdio) error {
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
	if err := os.Chdir(root); err != nil {
		return err
	}
	return syscall.Exec(goBin, demoArgv(args), os.Environ())
}

// demoArgv is the command line that builds and runs the demo.
func demoArgv(args []string) []string {
	return append([]string{"go", "run", "-tags", "demo", ".", "demo"}, args...)
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
