package server

import (
	"runtime/debug"
	"strings"
)

// Version is the gateway's version, reported by `agent-gateway version`,
// the landing page, the MCP server info and agent_gateway_build_info. A
// build may stamp it (make build sets `git describe` with -ldflags "-X
// …/server.Version=…", and VERSION=v1.2.3 a release name); otherwise it
// comes from the build information the go command records (see
// versionFromBuild), and "dev" when there is none.
var Version = "dev"

func init() {
	if Version == "dev" {
		bi, ok := debug.ReadBuildInfo()
		Version = versionFromBuild(bi, ok)
	}
}

// versionFromBuild names the build recorded in bi: the main module's
// version when it was built as a module (`go install …@v1.2.3`), else the
// VCS revision (12 hex digits, "-dirty" with uncommitted changes, as `git
// describe --dirty` says it) and the commit time, else "dev" (`go run`, or
// a build with -buildvcs=false outside a tagged module).
func versionFromBuild(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return strings.TrimSpace(rev + " " + at)
}
