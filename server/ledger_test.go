// This file keeps the ledger of what ships: the modules and standard
// packages the binary `make build` produces links, compared with a golden
// list, so a dependency that enters or leaves the binary is a visible diff
// in review rather than something found later in `go version -m`.
package server

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateLedger = flag.Bool("update", false, "rewrite testdata/ledger.txt from the binary's dependencies")

// ledgerFile is the golden list: one "module <path>" or "std <package>"
// per line, sorted. Module versions are left out on purpose: a version bump
// is go.mod's business; a module entering or leaving is the ledger's.
const ledgerFile = "testdata/ledger.txt"

// neverShipped are packages no production binary may link whatever the
// golden list says: test libraries and test doubles belong to tests (the
// same rule as "no test double in the binary"). A prefix ending in "/"
// matches the module and everything under it.
var neverShipped = []string{
	"testing",
	"testing/",
	"github.com/stretchr/testify/",
	"github.com/golang/mock/",
	"go.uber.org/mock/",
	"go.uber.org/goleak",
	"net/http/httptest",
	// The OTLP export is plain HTTP with a protobuf body
	// (encodeExportRequest); gRPC would come only with the collector's
	// generated service package.
	"google.golang.org/grpc/",
}

// stillLinked are never-shipped packages the binary links today, each with
// the dependency that drags it in. The list may only shrink: a package on
// it that is no longer linked fails the test until it is taken off.
var stillLinked = map[string]string{}

// TestLedgerOfWhatShips lists the dependencies of the main package with
// the build tags `make build` uses (none) and fails when a module or a
// standard package enters or leaves, or when a never-shipped package is
// linked. `go test ./server/ -run TestLedgerOfWhatShips -update` rewrites
// the list after a deliberate change.
func TestLedgerOfWhatShips(t *testing.T) {
	deps := shippedDeps(t)
	linked := map[string]bool{}
	for _, pkg := range deps.packages {
		linked[pkg] = true
		bad := neverShippedMatch(pkg)
		if bad == "" {
			continue
		}
		if via, ok := stillLinked[pkg]; ok {
			t.Logf("still linked, never allowed: %s (through %s)", pkg, via)
			continue
		}
		t.Errorf("the shipped binary links %s (never allowed: %s)", pkg, bad)
	}
	for pkg := range stillLinked {
		if !linked[pkg] {
			t.Errorf("%s is no longer linked: take it off stillLinked", pkg)
		}
	}
	got := deps.ledger()
	if *updateLedger {
		if err := os.WriteFile(ledgerFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(ledgerFile)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	entered, left := lineDiff(string(want), got)
	for _, l := range entered {
		t.Errorf("entered the shipped binary: %s", l)
	}
	for _, l := range left {
		t.Errorf("left the shipped binary: %s", l)
	}
	if len(entered)+len(left) > 0 {
		t.Log("if the change is deliberate: go test ./server/ -run TestLedgerOfWhatShips -update")
	}
}

// TestNeverShippedMatch proves the forbidden list catches what it names
// and nothing that merely shares a prefix.
func TestNeverShippedMatch(t *testing.T) {
	for _, tc := range []struct {
		pkg  string
		want bool
	}{
		{"testing", true},
		{"testing/iotest", true},
		{"github.com/stretchr/testify/require", true},
		{"github.com/golang/mock/gomock", true},
		{"go.uber.org/mock/gomock", true},
		{"net/http/httptest", true},
		{"google.golang.org/grpc", true},
		{"google.golang.org/grpc/codes", true},
		{"google.golang.org/protobuf/proto", false},
		{"testingx", false},
		{"net/http", false},
		{"github.com/stretchr/testifyx", false},
	} {
		if got := neverShippedMatch(tc.pkg) != ""; got != tc.want {
			t.Errorf("neverShippedMatch(%q) = %v, want %v", tc.pkg, got, tc.want)
		}
	}
}

// TestLineDiff: the comparison names both directions.
func TestLineDiff(t *testing.T) {
	entered, left := lineDiff("module a\nmodule b\n", "module b\nmodule c\n")
	if strings.Join(entered, ",") != "module c" || strings.Join(left, ",") != "module a" {
		t.Fatalf("entered %q left %q", entered, left)
	}
}

// shipped is what `go list -deps` reports for the main package.
type shipped struct {
	packages []string // every import path, module and standard
	modules  []string // module paths, the main module excluded
	std      []string // standard packages, internal and vendored ones excluded
}

// ledger renders the golden form. Standard packages under internal/ or
// vendor/ are left out: they change with every Go release and are no
// decision of this project.
func (s shipped) ledger() string {
	var b strings.Builder
	for _, m := range s.modules {
		b.WriteString("module " + m + "\n")
	}
	for _, p := range s.std {
		b.WriteString("std " + p + "\n")
	}
	return b.String()
}

func shippedDeps(t *testing.T) shipped {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the ledger needs the go tool: %v", err)
	}
	// Module.Main marks this module; Standard marks the standard library.
	const format = `{{.ImportPath}}	{{if .Module}}{{if not .Module.Main}}{{.Module.Path}}{{end}}{{end}}	{{.Standard}}`
	cmd := exec.Command(goTool, "list", "-deps", "-f", format, ".")
	cmd.Dir = filepath.Join("..")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v: %s", err, stderr.String())
	}
	var s shipped
	modules := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", line)
		}
		s.packages = append(s.packages, f[0])
		switch {
		case f[1] != "":
			modules[f[1]] = true
		case f[2] == "true" && !internalStd(f[0]):
			s.std = append(s.std, f[0])
		}
	}
	for m := range modules {
		s.modules = append(s.modules, m)
	}
	sort.Strings(s.modules)
	sort.Strings(s.std)
	if len(s.modules) == 0 || len(s.std) == 0 {
		t.Fatalf("go list found %d modules, %d standard packages: the listing is wrong", len(s.modules), len(s.std))
	}
	return s
}

func internalStd(pkg string) bool {
	for _, el := range strings.Split(pkg, "/") {
		if el == "internal" || el == "vendor" {
			return true
		}
	}
	return strings.HasPrefix(pkg, "vendor/")
}

func neverShippedMatch(pkg string) string {
	for _, n := range neverShipped {
		if pkg == n || (strings.HasSuffix(n, "/") && (strings.HasPrefix(pkg, n) || pkg == strings.TrimSuffix(n, "/"))) {
			return n
		}
	}
	return ""
}

// lineDiff returns the lines of got missing from want (entered) and those
// of want missing from got (left).
func lineDiff(want, got string) (entered, left []string) {
	set := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			if l != "" {
				m[l] = true
			}
		}
		return m
	}
	w, g := set(want), set(got)
	for l := range g {
		if !w[l] {
			entered = append(entered, l)
		}
	}
	for l := range w {
		if !g[l] {
			left = append(left, l)
		}
	}
	sort.Strings(entered)
	sort.Strings(left)
	return entered, left
}
