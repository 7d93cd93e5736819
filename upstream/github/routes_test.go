package github

import (
	"testing"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// TestEmulatorServesClientRoutes: every route the client requests is one
// the emulated GitHub serves, with the same method and the same shape,
// and none is the emulator's own record route.
func TestEmulatorServesClientRoutes(t *testing.T) {
	emu, err := githubemu.Start(githubemu.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	for i, r := range ClientRoutes {
		t.Run(r.Method+" "+r.Template, func(t *testing.T) {
			if Routes[i] != r.Template {
				t.Errorf("span template %q", Routes[i])
			}
			got := emu.Pattern(r.Method, r.ExamplePath())
			if upstream.RouteShape(got) != upstream.RouteShape(r.Template) {
				t.Fatalf("the emulator serves %s %s with %q", r.Method, r.ExamplePath(), got)
			}
			if r.Matches(emurecord.Path) {
				t.Fatalf("the client could ask for the emulator's own record route %s", emurecord.Path)
			}
		})
	}
}
