//go:build !demo

package server

import (
	"os"
	"path/filepath"
	"testing"
)

// demoTree writes a small checkout: go.mod, go.sum, a package, a test, a
// doc, testdata, an emulator under test/ and a hidden directory.
func demoTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range map[string]string{
		"go.mod":                         "module " + modulePath + "\n\ngo 1.26.8\n",
		"go.sum":                         "example.com/x v1.0.0 h1:abc=\n",
		"main.go":                        "package main\n",
		"server/demo.go":                 "//go:build demo\n\npackage server\n",
		"server/serve_test.go":           "package server\n",
		"web/templates/page.html":        "<p>embedded</p>\n",
		"test/forgejoemu/emulator.go":    "package forgejoemu\n",
		"docs/tools.md":                  "# Tools\n",
		"server/testdata/fuzz/FuzzX/a":   "go test fuzz v1\n",
		".github/workflows/ci.yml":       "on: push\n",
		"_scratch/notes.go":              "package scratch\n",
		"test/e2e/demo_walk_test.go":     "package e2e\n",
		"upstream/forgejo/pagination.go": "package forgejo\n",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var demoEnv = map[string]string{"GOVERSION": "go1.26.8", "GOOS": "linux", "GOARCH": "amd64", "GOMOD": "/src/go.mod"}

// TestDemoSourceKey: the key of the cached demo binary changes with every
// file the demo build can read and with the go settings that shape its
// output, and with nothing else, so an unchanged checkout starts without a
// build and a changed one never runs a stale binary.
func TestDemoSourceKey(t *testing.T) {
	base, err := demoSourceKey(demoTree(t), demoEnv)
	if err != nil || len(base) != 64 {
		t.Fatalf("key %q, %v", base, err)
	}
	write := func(rel, content string) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name    string
		change  func(t *testing.T, root string)
		env     map[string]string
		changed bool
	}{
		{"nothing", nil, nil, false},
		{"a package file", write("upstream/forgejo/pagination.go", "package forgejo // edited\n"), nil, true},
		{"the demo-tagged file", write("server/demo.go", "//go:build demo\n\npackage server // edited\n"), nil, true},
		{"an emulator under test/", write("test/forgejoemu/emulator.go", "package forgejoemu // edited\n"), nil, true},
		{"an embedded template", write("web/templates/page.html", "<p>edited</p>\n"), nil, true},
		{"go.sum", write("go.sum", "example.com/x v1.0.1 h1:def=\n"), nil, true},
		{"a new package file", write("handlers/new.go", "package handlers\n"), nil, true},
		{"a file renamed", func(t *testing.T, root string) {
			if err := os.Rename(filepath.Join(root, "main.go"), filepath.Join(root, "main2.go")); err != nil {
				t.Fatal(err)
			}
		}, nil, true},
		{"the toolchain", nil, map[string]string{"GOVERSION": "go1.26.9"}, true},
		{"GOFLAGS", nil, map[string]string{"GOFLAGS": "-race"}, true},
		{"cgo", nil, map[string]string{"CGO_ENABLED": "0"}, true},
		{"a test file", write("server/serve_test.go", "package server // edited\n"), nil, false},
		{"a doc", write("docs/tools.md", "# Edited\n"), nil, false},
		{"testdata", write("server/testdata/fuzz/FuzzX/b", "go test fuzz v1\n"), nil, false},
		{"a hidden directory", write(".github/workflows/ci.yml", "on: pull_request\n"), nil, false},
		{"an _ directory", write("_scratch/notes.go", "package scratch // edited\n"), nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := demoTree(t)
			if tc.change != nil {
				tc.change(t, root)
			}
			env := map[string]string{}
			for k, v := range demoEnv {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			key, err := demoSourceKey(root, env)
			if err != nil {
				t.Fatal(err)
			}
			if (key != base) != tc.changed {
				t.Fatalf("key changed = %v, want %v", key != base, tc.changed)
			}
		})
	}
	t.Run("a workspace or a local replace: unknown, always build", func(t *testing.T) {
		root := demoTree(t)
		if key, err := demoSourceKey(root, map[string]string{"GOWORK": "/src/go.work"}); key != "" || err != nil {
			t.Fatalf("with a go.work: %q, %v", key, err)
		}
		if key, _ := demoSourceKey(root, map[string]string{"GOWORK": "off"}); key == "" {
			t.Fatal("GOWORK=off is no workspace")
		}
		for _, replace := range []string{"replace example.com/x => ../x", "replace example.com/x v1.0.0 => ./x", "replace (\n\texample.com/x => /abs/x\n)"} {
			write("go.mod", "module "+modulePath+"\n\n"+replace+"\n")(t, root)
			if key, err := demoSourceKey(root, demoEnv); key != "" || err != nil {
				t.Fatalf("%s: %q, %v", replace, key, err)
			}
		}
		write("go.mod", "module "+modulePath+"\n\nreplace example.com/x => example.com/y v1.2.0\n")(t, root)
		if key, _ := demoSourceKey(root, demoEnv); key == "" {
			t.Fatal("a replace by another module version is no local source")
		}
	})
}

// TestDemoBuildFresh: the cached binary is used only when the recorded
// key is the key of the sources now and the binary is an executable file.
func TestDemoBuildFresh(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := demoTree(t)
	b, err := planDemoBuild(t.Context(), root, "go")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(filepath.Dir(b.bin)) != filepath.Join(os.Getenv("XDG_CACHE_HOME"), "agent-gateway", "demo") {
		t.Fatalf("binary at %s, want it under the user cache directory", b.bin)
	}
	other, _ := planDemoBuild(t.Context(), demoTree(t), "go")
	if other.bin == b.bin {
		t.Fatal("two checkouts share one cached binary")
	}
	b.key = "k1"
	if b.fresh() {
		t.Fatal("fresh with nothing built")
	}
	if err := os.MkdirAll(filepath.Dir(b.bin), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.keyFile, []byte("k1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b.fresh() {
		t.Fatal("fresh with a key but no binary")
	}
	if err := os.WriteFile(b.bin, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b.fresh() {
		t.Fatal("fresh with a binary that is not executable")
	}
	if err := os.Chmod(b.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if !b.fresh() {
		t.Fatal("not fresh with the key and the binary")
	}
	b.key = "k2"
	if b.fresh() {
		t.Fatal("fresh after the sources changed")
	}
	b.key = ""
	if b.fresh() {
		t.Fatal("fresh with an unknown key")
	}
}

// BenchmarkDemoSourceKey: hashing this checkout, what a start from
// unchanged sources does instead of a go build (docs/performance.md).
func BenchmarkDemoSourceKey(b *testing.B) {
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := demoSourceKey(root, demoEnv); err != nil {
			b.Fatal(err)
		}
	}
}
