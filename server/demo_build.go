//go:build !demo

package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// demoBuildEnv are the go env settings a build's output depends on: the
// toolchain, the target, cgo, GOFLAGS (which may add tags, -race, -mod)
// and the workspace. They are read with `go env`, so settings written by
// `go env -w` count as much as the environment's.
var demoBuildEnv = []string{
	"GOVERSION", "GOROOT", "GOOS", "GOARCH", "GOAMD64", "GOARM", "GOARM64", "GO386",
	"GOPPC64", "GORISCV64", "GOMIPS", "GOMIPS64", "GOWASM", "GOEXPERIMENT", "GOFIPS140",
	"GOFLAGS", "GOWORK", "GOMOD", "CGO_ENABLED", "CC", "CXX",
	"CGO_CFLAGS", "CGO_CPPFLAGS", "CGO_CXXFLAGS", "CGO_FFLAGS", "CGO_LDFLAGS",
}

// demoBuild is the demo binary of one source checkout, kept in the user's
// cache directory, and the key of the sources it was built from.
//
// Two go commands in a row (`go run .` re-executing `go run -tags demo .`)
// made every start wait for two builds' worth of checks, and the first for
// two compiles and two links. Now the first process hashes what the build
// reads (demoSourceKey) in milliseconds: when the binary on disk was built
// from exactly that, it is exec'd with no go build at all; otherwise `go
// build -o` writes it in place (relinking only when its inputs changed; go
// build leaves an up-to-date binary alone) and the key is recorded after.
type demoBuild struct {
	root, goBin string
	bin         string // the cached binary
	keyFile     string // the key of the sources bin was built from
	key         string // the key of the sources now; "" when unknown
}

// planDemoBuild returns the demo build of the checkout at root.
func planDemoBuild(ctx context.Context, root, goBin string) (*demoBuild, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("demo: no user cache directory to keep the demo binary in (set XDG_CACHE_HOME or HOME): %w", err)
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(cache, "agent-gateway", "demo", hex.EncodeToString(sum[:8]))
	b := &demoBuild{root: root, goBin: goBin, bin: filepath.Join(dir, "agent-gateway-demo"), keyFile: filepath.Join(dir, "sources.key")}
	if env, err := goEnv(ctx, goBin, root); err == nil {
		b.key, _ = demoSourceKey(root, env)
	}
	return b, nil
}

// fresh reports whether the cached binary was built from the sources as
// they are now.
func (b *demoBuild) fresh() bool {
	if b.key == "" {
		return false
	}
	recorded, err := readBounded(b.keyFile, 256)
	if err != nil || strings.TrimSpace(string(recorded)) != b.key {
		return false
	}
	fi, err := os.Stat(b.bin)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o100 != 0
}

// build runs `go build -tags demo -o bin .` in the checkout, its output on
// w, and records the key. The old key goes first: a build that fails or
// is interrupted leaves no key, so the next run builds again.
func (b *demoBuild) build(ctx context.Context, w io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(b.bin), 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.Remove(b.keyFile); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("demo: %w", err)
	}
	cmd := exec.CommandContext(ctx, b.goBin, "build", "-tags", "demo", "-o", b.bin, ".")
	cmd.Dir, cmd.Stdout, cmd.Stderr = b.root, w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("demo: go build -tags demo failed: %w", err)
	}
	if b.key == "" {
		return nil
	}
	tmp := b.keyFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.key+"\n"), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.Rename(tmp, b.keyFile); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// goEnv returns demoBuildEnv as `go env -json` reports it in the checkout.
func goEnv(ctx context.Context, goBin, root string) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, goBin, append([]string{"env", "-json"}, demoBuildEnv...)...)
	cmd.Dir = root
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	env := map[string]string{}
	decErr := json.NewDecoder(io.LimitReader(out, 64<<10)).Decode(&env)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return nil, err
	}
	return env, decErr
}

// demoSourceKey hashes env and every file the demo build may read under
// root: the tree without .git, docs/, testdata, hidden or "_" entries and
// *_test.go files (the files gatewaytest.TouchSources opens, plus test/,
// whose emulators the demo links). Dependencies are fixed by go.mod and
// go.sum, which it hashes. It returns "" (unknown: always build) when a
// go.work or a replace to a local directory brings in sources outside
// root, or when a file cannot be read.
func demoSourceKey(root string, env map[string]string) (string, error) {
	if env["GOWORK"] != "" && env["GOWORK"] != "off" {
		return "", nil
	}
	if local, err := replacesLocally(filepath.Join(root, "go.mod")); err != nil || local {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "agent-gateway demo sources v1\n")
	for _, k := range demoBuildEnv {
		fmt.Fprintf(h, "%s=%q\n", k, env[k])
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir() && (rel == "docs" || name == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || strings.HasSuffix(name, "_test.go"):
			return nil
		}
		fmt.Fprintf(h, "%q %v\n", filepath.ToSlash(rel), d.Type())
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			fmt.Fprintf(h, "-> %q\n", target)
			return err
		}
		return hashFile(h, path)
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes the file at path's length and SHA-256 to h, streaming it.
func hashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fh := sha256.New()
	n, err := io.Copy(fh, f)
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%d %x\n", n, fh.Sum(nil))
	return nil
}

// replacesLocally reports whether go.mod replaces a module with a
// directory (a path starting with ./, ../ or /), whose sources lie outside
// the checkout.
func replacesLocally(gomod string) (bool, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		_, target, ok := strings.Cut(sc.Text(), "=>")
		if !ok {
			continue
		}
		if fields := strings.Fields(target); len(fields) > 0 {
			if p := fields[0]; p == "." || p == ".." || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || filepath.IsAbs(p) {
				return true, nil
			}
		}
	}
	return false, sc.Err()
}

// readBounded reads at most n bytes of the file at path.
func readBounded(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
