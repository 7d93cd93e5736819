package e2e

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// configTestWith runs `agent-gateway <args>` with a clean environment plus
// vars, as an operator's shell would hold them.
func configTestWith(t *testing.T, vars []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), args...)
	cmd.Env = append(append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+t.TempDir(), "GORACE=atexit_sleep_ms=0"), vars...)
	return runCommand(t, cmd)
}

// TestConfigUnknownVariables: the binary refuses, in one report with the
// rest, every AGENT_GATEWAY_* (and HEYAIRA_GITHUB_*) variable nothing
// reads, by name with the nearest known one, never echoing a value, and
// the App's two names set to different values; it accepts the variables
// that are not settings and Kubernetes' Service variables. Commands that
// load no configuration (version, diff --help) do not look.
func TestConfigUnknownVariables(t *testing.T) {
	const canary = "CANARY-e2e-env-5a0c"
	code, out, errs := configTestWith(t, []string{
		"AGENT_GATEWAY_FORGEJO_ORIGN=https://forge.example",
		"AGENT_GATEWAY_OIDC_CLIENT_SECRT=" + canary,
		"AGENT_GATEWAY_GITHUB_APP_ID=1",
		"HEYAIRA_GITHUB_APP_ID=2",
		"HEYAIRA_GITHUB_APP_PRIVATE_KEY=/k.pem",
		"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE=0",
	}, "serve", "--config-test")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, want 2 and nothing on stdout\n%s%s", code, out, errs)
	}
	requireLines(t, errs,
		"AGENT_GATEWAY_FORGEJO_ORIGN (environment): unknown variable; did you mean AGENT_GATEWAY_FORGEJO_ORIGIN?",
		"AGENT_GATEWAY_OIDC_CLIENT_SECRT (environment): unknown variable; did you mean AGENT_GATEWAY_OIDC_CLIENT_SECRET?",
		"HEYAIRA_GITHUB_APP_PRIVATE_KEY (environment): unknown variable; did you mean HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE?",
		"github.app_id (AGENT_GATEWAY_GITHUB_APP_ID, HEYAIRA_GITHUB_APP_ID): set to different values",
		"ratelimit.read_per_minute (AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE)",
	)
	if strings.Contains(errs, canary) {
		t.Errorf("the report echoes a value:\n%s", errs)
	}

	accepted := []string{
		"AGENT_GATEWAY_TOKEN=" + canary, "AGENT_GATEWAY_TEST_REDIS_URL=redis://127.0.0.1:6379/0",
		"AGENT_GATEWAY_SERVICE_HOST=10.96.0.12", "AGENT_GATEWAY_SERVICE_PORT_HTTP=80",
		"AGENT_GATEWAY_PORT=tcp://10.96.0.12:80", "AGENT_GATEWAY_PORT_80_TCP_PROTO=tcp",
		"HEYAIRA_F1_E2E_DATABASE_URL=postgresql://db.example/x",
	}
	if code, out, errs := configTestWith(t, accepted, "serve", "--config-test"); code != 0 || !strings.HasPrefix(out, "configuration OK\n") {
		t.Fatalf("accepted variables: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{{"version"}, {"diff", "--help"}} {
		if code, _, errs := configTestWith(t, []string{"AGENT_GATEWAY_BOGUS=1"}, args...); code != 0 {
			t.Errorf("%v with an unknown variable: exit %d\n%s", args, code, errs)
		}
	}
	// admin reads the store from the same configuration, so it refuses too.
	if code, _, errs := configTestWith(t, []string{"AGENT_GATEWAY_DATABASE_ULR=postgres://x"}, "admin", "list-projects"); code != 2 || !strings.Contains(errs, "did you mean AGENT_GATEWAY_DATABASE_URL?") {
		t.Errorf("admin with a misspelt variable: exit %d\n%s", code, errs)
	}
}

// TestDocumentsAppVariableNames: the GitHub App configured through the
// variables of its keys (AGENT_GATEWAY_GITHUB_APP_ID,
// AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE) reads documents from the GitHub
// emulator as it does through the HEYAIRA_* names (the rest of the
// documents suite), and --config-test shows it.
func TestDocumentsAppVariableNames(t *testing.T) {
	key := writeAppKey(t)
	vars := map[string]string{"AGENT_GATEWAY_GITHUB_APP_ID": strconv.Itoa(appID), "AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE": key}
	code, out, errs := configTestWith(t, []string{"AGENT_GATEWAY_GITHUB_APP_ID=" + vars["AGENT_GATEWAY_GITHUB_APP_ID"], "AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE=" + key}, "serve", "--config-test")
	if code != 0 || !strings.Contains(out, "  github.app_id                "+strconv.Itoa(appID)+"\n") || !strings.Contains(out, "  github.private_key_file      "+key+"\n") {
		t.Fatalf("--config-test: exit %d\n%s%s", code, out, errs)
	}
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{noApp: true, env: vars})
	cs := s.session(t, s.tokenA)
	if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); isErr {
		t.Fatalf("a read with the App set by its keys' variables: %v", out)
	}
	if n := s.emu.TokenMints(); n != 1 {
		t.Fatalf("%d installation token mints, want 1", n)
	}
}

// TestConfigPorts: the binary refuses, in one report naming each key and
// its source, a listener port past 65535 or 0 and a URL port past 65535,
// which it used to pass --config-test with; a port in range passes.
func TestConfigPorts(t *testing.T) {
	code, out, errs := configTestWith(t, []string{"AGENT_GATEWAY_METRICS_LISTEN=127.0.0.1:0", "AGENT_GATEWAY_FORGEJO_ORIGIN=https://forge.example:70000"},
		"serve", "--config-test", "--listen", "127.0.0.1:99999", "--public-url", "https://gw.example:99999")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, want 2 and nothing on stdout\n%s%s", code, out, errs)
	}
	requireLines(t, errs,
		`listen (--listen): want host:port with a port from 1 to 65535, not "99999"`,
		`metrics.listen (AGENT_GATEWAY_METRICS_LISTEN): want host:port with a port from 1 to 65535, not "0"`,
		"public_url (--public-url): the port must be from 1 to 65535",
		"forgejo.origin (AGENT_GATEWAY_FORGEJO_ORIGIN): the port must be from 1 to 65535",
	)
	code, out, errs = configTestWith(t, nil, "serve", "--config-test", "--listen", "127.0.0.1:65535", "--metrics-listen", "127.0.0.1:1")
	if code != 0 || !strings.Contains(out, "  listen                       127.0.0.1:65535\n") {
		t.Fatalf("ports in range: exit %d\n%s%s", code, out, errs)
	}
}

// TestConfigTestHalfConfiguredApp: an App ID without a key (by either of
// its variable names), or a key without an ID, is reported by
// --config-test, naming what is missing; both or neither is not. It used to
// pass silently.
func TestConfigTestHalfConfiguredApp(t *testing.T) {
	key := writeAppKey(t)
	for _, tc := range []struct {
		name string
		vars []string
		want string // "" for no warning
	}{
		{"seed's ID variable alone", []string{"HEYAIRA_GITHUB_APP_ID=1001"}, "warning: github.app_id (HEYAIRA_GITHUB_APP_ID, AGENT_GATEWAY_GITHUB_APP_ID) is set but github.private_key_file"},
		{"the twin alone", []string{"AGENT_GATEWAY_GITHUB_APP_ID=1001"}, "warning: github.app_id (HEYAIRA_GITHUB_APP_ID, AGENT_GATEWAY_GITHUB_APP_ID) is set but github.private_key_file"},
		{"a key alone", []string{"HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE=" + key}, "warning: github.private_key_file is set but github.app_id"},
		{"both", []string{"HEYAIRA_GITHUB_APP_ID=1001", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE=" + key}, ""},
		{"neither", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := configTestWith(t, tc.vars, "serve", "--config-test")
			if code != 0 || !strings.HasPrefix(out, "configuration OK\n") {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			switch {
			case tc.want == "" && strings.Contains(out, "warning:"):
				t.Fatalf("a warning for a consistent App:\n%s", out)
			case tc.want != "" && !strings.Contains(out, tc.want):
				t.Fatalf("want %q in:\n%s", tc.want, out)
			case tc.want != "" && !strings.Contains(out, "provider_unconfigured"):
				t.Fatalf("the warning does not say what it costs:\n%s", out)
			}
		})
	}
}
