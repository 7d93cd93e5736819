package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
		return runCommand(t, exec.Command(bin, args...))
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

// TestConfigErrorsAtOnce starts the real binary with several configuration
// mistakes across keys and sources: it exits 2 before listening and names
// every one in one report, the client ID an invalid issuer requires
// included, an ftp:// allowed origin refused, and a GitHub App key file
// that holds no key (which New used to find only once the rest was fixed).
func TestConfigErrorsAtOnce(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(junk, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENT_GATEWAY_") && !strings.HasPrefix(kv, "HEYAIRA_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"AGENT_GATEWAY_OIDC_ISSUER=ftp://idp.example",
		"AGENT_GATEWAY_ALLOWED_ORIGINS=https://ok.example,ftp://x.example",
		"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE=0",
		"AGENT_GATEWAY_DATA_DIR="+t.TempDir(),
		"HEYAIRA_GITHUB_APP_ID=1",
		"HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE="+junk,
	)
	cmd := exec.Command(gatewaytest.Binary(t), "serve", "--listen", "no-port", "--forgejo-origin", "http://forge.example")
	cmd.Env = env
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, errs.String())
	}
	report := errs.String()
	requireLines(t, report,
		"oidc.issuer (AGENT_GATEWAY_OIDC_ISSUER)",
		"oidc.client_id: required when oidc.issuer is set",
		`allowed_origins (AGENT_GATEWAY_ALLOWED_ORIGINS): "ftp://x.example"`,
		"ratelimit.read_per_minute (AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE)",
		"listen (--listen)",
		"forgejo.origin (--forgejo-origin)",
		"github.private_key_file: ",
	)
	if strings.Contains(report, "listening") || out.Len() > 0 {
		t.Errorf("the gateway started or printed to stdout:\n%s\n%s", out.String(), report)
	}
}
