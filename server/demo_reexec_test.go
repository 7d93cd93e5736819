//go:build !demo

package server

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	write := func(t *testing.T, path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ours := "// comment\n\nmodule " + modulePath + "\n\ngo 1.26.8\n"
	cases := []struct {
		name  string
		files map[string]string // relative path → content
		from  string            // relative start directory
		want  string            // relative root; "" for errNoCheckout
	}{
		{"at the root", map[string]string{"go.mod": ours}, ".", "."},
		{"below the root", map[string]string{"go.mod": ours}, "server/sub", "."},
		{"quoted module path", map[string]string{"go.mod": `module "` + modulePath + `"` + "\n"}, "x", "."},
		{"nearest of ours wins", map[string]string{"go.mod": ours, "vendor/copy/go.mod": ours}, "vendor/copy/y", "vendor/copy"},
		{"another module is passed over", map[string]string{"go.mod": ours, "tools/go.mod": "module example.com/tools\n"}, "tools", "."},
		{"a module path with ours as prefix", map[string]string{"go.mod": "module " + modulePath + "/v2\n"}, ".", ""},
		{"no go.mod at all", nil, "a/b", ""},
		{"a go.mod without a module line", map[string]string{"go.mod": "go 1.26\n"}, ".", ""},
		{"the module line beyond the read bound", map[string]string{"go.mod": strings.Repeat("// pad\n", 10<<10) + "module " + modulePath + "\n"}, ".", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, c := range tc.files {
				write(t, filepath.Join(dir, p), c)
			}
			from := filepath.Join(dir, tc.from)
			if err := os.MkdirAll(from, 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := moduleRoot(from)
			if tc.want == "" {
				// The temp dir's own parents hold no go.mod of ours either.
				if !errors.Is(err, errNoCheckout) {
					t.Fatalf("root %q, err %v; want errNoCheckout", got, err)
				}
				return
			}
			if err != nil || got != filepath.Join(dir, tc.want) {
				t.Fatalf("root %q, err %v; want %s", got, err, filepath.Join(dir, tc.want))
			}
		})
	}
}

func TestDemoArgv(t *testing.T) {
	got := demoArgv("/cache/agent-gateway-demo", []string{"--listen", "127.0.0.1:0"})
	want := []string{"/cache/agent-gateway-demo", "demo", "--listen", "127.0.0.1:0"}
	if !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
	// The flags are the user's own, after the subcommand, never before it.
	if got := demoArgv("/cache/agent-gateway-demo", nil); !slices.Equal(got, want[:2]) {
		t.Fatalf("%q", got)
	}
}
