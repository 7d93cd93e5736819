package e2e

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestCLIHelp runs the shipped binary (and the demo binary for demo) as a
// new user would: --help and help list every command on stdout with exit
// 0, each command's --help names it, and --version and version print the
// same build version.
func TestCLIHelp(t *testing.T) {
	bin := gatewaytest.Binary(t)
	exe := func(t *testing.T, bin string, args ...string) (int, string, string) {
		t.Helper()
		var out, errs bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errs.String()
	}
	for _, args := range [][]string{{"--help"}, {"help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := exe(t, bin, args...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			for _, c := range []string{"serve", "demo", "stdio", "admin", "diff", "version"} {
				if !regexp.MustCompile(`(?m)^  ` + c + ` +\S`).MatchString(out) {
					t.Errorf("no line for %s:\n%s", c, out)
				}
			}
		})
	}
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{bin, []string{"serve", "--help"}},
		{bin, []string{"stdio", "--help"}},
		{bin, []string{"admin", "--help"}},
		{bin, []string{"diff", "--help"}},
		{bin, []string{"version", "--help"}},
		{gatewaytest.DemoBinary(t), []string{"demo", "--help"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, _ := exe(t, c.bin, c.args...)
			if code != 0 || !strings.HasPrefix(out, "usage: agent-gateway "+c.args[0]) {
				t.Fatalf("exit %d, stdout:\n%s", code, out)
			}
		})
	}
	_, v1, _ := exe(t, bin, "--version")
	code, v2, errs := exe(t, bin, "version")
	if code != 0 || errs != "" || v1 != v2 || !regexp.MustCompile(`^agent-gateway \S+ go1\.\S+\n$`).MatchString(v1) {
		t.Fatalf("--version %q, version %q (exit %d, stderr %q)", v1, v2, code, errs)
	}
}
