package server

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

// run calls Main with captured streams.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errs bytes.Buffer
	code = Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errs})
	return code, out.String(), errs.String()
}

// TestMainHelp pins the CLI's self-description: every way of asking for
// help lists every command with one line each on stdout and exits 0; each
// command's --help names it on stdout; a bad flag or command is an error
// on stderr with exit 2.
func TestMainHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := run(args...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			for _, c := range []string{"serve", "demo", "stdio", "admin", "diff", "version"} {
				n := 0
				for _, line := range strings.Split(out, "\n") {
					if f := strings.Fields(line); len(f) > 1 && f[0] == c {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d usage lines for %s:\n%s", n, c, out)
				}
			}
		})
	}
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"serve", "--help"}, "usage: agent-gateway serve [flags]"},
		{[]string{"--help", "ignored"}, "usage: agent-gateway [command]"},
		{[]string{"stdio", "-h"}, "usage: agent-gateway stdio [flags]"},
		{[]string{"version", "--help"}, "usage: agent-gateway version\n"},
		{[]string{"admin", "--help"}, "usage: agent-gateway admin <command>"},
		{[]string{"admin", "create-project", "--help"}, "agent-gateway admin create-project"},
		{[]string{"diff", "--help"}, "usage: agent-gateway diff "},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := run(c.args...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, c.name) && !strings.Contains(out, c.name) {
				t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant it to name %q", code, out, errs, c.name)
			}
		})
	}
	for _, args := range [][]string{{"--bogus"}, {"serve", "--bogus"}, {"bogus"}, {"version", "extra"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := run(args...)
			if code != 2 || out != "" || errs == "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 with the error on stderr", code, out, errs)
			}
		})
	}
}

// TestMainVersion checks that --version and version print the same line.
func TestMainVersion(t *testing.T) {
	want := "agent-gateway " + Version + " "
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		code, out, errs := run(args...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// TestVersionFromBuild pins where the version comes from: a module
// version first, else the VCS revision and time, else "dev".
func TestVersionFromBuild(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "dev"},
		{"module version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("vcs.revision", rev)}, true, "v1.2.3"},
		{"devel without VCS", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev"},
		{"VCS revision and time", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", rev, "vcs.time", "2026-11-30T22:00:00Z", "vcs.modified", "false")}, true, "0123456789ab 2026-11-30T22:00:00Z"},
		{"modified checkout", &debug.BuildInfo{Settings: vcs("vcs.revision", rev, "vcs.time", "2026-11-30T22:00:00Z", "vcs.modified", "true")},
			true, "0123456789ab-dirty 2026-11-30T22:00:00Z"},
		{"short revision, no time", &debug.BuildInfo{Settings: vcs("vcs.revision", "abc")}, true, "abc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := versionFromBuild(c.bi, c.ok); got != c.want {
				t.Fatalf("versionFromBuild = %q, want %q", got, c.want)
			}
		})
	}
}
