package forgejo_test

import (
	"testing"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo"
)

// TestEmulatorServesClientRoutes: every route the client requests is one
// the emulated Forgejo serves, with the same method and the same shape, so
// the emulator the tests run against and the client cannot drift apart;
// every template is one tracing names (Routes); and none is the
// emulator's own record route.
func TestEmulatorServesClientRoutes(t *testing.T) {
	emu, err := forgejoemu.Start(forgejoemu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	if len(forgejo.Routes) != len(forgejo.ClientRoutes) {
		t.Fatalf("%d span templates for %d routes", len(forgejo.Routes), len(forgejo.ClientRoutes))
	}
	for i, r := range forgejo.ClientRoutes {
		t.Run(r.Method+" "+r.Template, func(t *testing.T) {
			if forgejo.Routes[i] != r.Template {
				t.Errorf("span template %q", forgejo.Routes[i])
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
