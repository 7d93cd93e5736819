// Package fuzzseed keeps the committed seed corpora of the gateway's fuzz
// targets (testdata/fuzz/<Target>/<name> beside each parser) in step with
// the generators that make them: the emulators' fault switches and the
// hostile inputs of the tests. A generator test calls Sync with every seed;
// with UPDATE_FUZZ_SEEDS=1 the files are (re)written, otherwise a missing
// or different file fails the test, so a corpus cannot silently drift from
// what the emulators send.
package fuzzseed

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Updating reports whether the seed files are to be rewritten
// (UPDATE_FUZZ_SEEDS=1).
func Updating() bool { return os.Getenv("UPDATE_FUZZ_SEEDS") != "" }

// Encode renders fuzz arguments in the "go test fuzz v1" corpus format.
// Supported types are those the gateway's targets take: []byte, string,
// bool, uint8, uint16, int64.
func Encode(values ...any) string {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch x := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", x)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", x)
		case bool:
			fmt.Fprintf(&b, "bool(%v)\n", x)
		case uint8:
			fmt.Fprintf(&b, "byte(%q)\n", x)
		case uint16:
			fmt.Fprintf(&b, "uint16(%d)\n", x)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", x)
		default:
			panic(fmt.Sprintf("fuzzseed: unsupported type %T", v))
		}
	}
	return b.String()
}

// Seed is one corpus entry: a file name and the fuzz arguments.
type Seed struct {
	Name   string
	Values []any
	// Live marks a seed captured from a running emulator, whose bytes
	// carry timestamps or random IDs: outside UPDATE_FUZZ_SEEDS only its
	// presence is checked.
	Live bool
}

// Sync writes (when Updating) or checks the seeds of one target under
// testdata/fuzz/<target> of the calling package. Files in the directory
// that no seed names are left alone: they are findings the fuzzer
// minimized and someone committed on purpose.
func Sync(t testing.TB, target string, seeds []Seed) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	names := make([]string, 0, len(seeds))
	for _, s := range seeds {
		if slices.Contains(names, s.Name) {
			t.Fatalf("fuzzseed: seed %s/%s appears twice", target, s.Name)
		}
		names = append(names, s.Name)
		file := filepath.Join(dir, s.Name)
		content := Encode(s.Values...)
		if Updating() {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(file)
		if err == nil && s.Live && strings.HasPrefix(string(got), "go test fuzz v1\n") {
			continue
		}
		if err != nil || string(got) != content {
			t.Errorf("fuzz seed %s/%s is missing or stale: run UPDATE_FUZZ_SEEDS=1 go test -run %s", target, s.Name, t.Name())
		}
	}
}
