package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigTestHidesSecrets runs `serve --config-test` with a canary in
// every secret and secret-bearing URL, and checks the output names each
// key but never a secret value.
func TestConfigTestHidesSecrets(t *testing.T) {
	const canary = "CANARY-4c1d"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(canary+"-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AGENT_GATEWAY_FORGEJO_PASSWORD":    canary + "-password",
		"AGENT_GATEWAY_FORGEJO_USERNAME":    "bob",
		"AGENT_GATEWAY_DATABASE_URL":        "postgres://user:" + canary + "-db@db.example/gw",
		"AGENT_GATEWAY_RATELIMIT_REDIS_URL": "redis://:" + canary + "-redis@redis.example:6379/0",
		"AGENT_GATEWAY_FORGEJO_ORIGIN":      "https://forge.example",
	} {
		t.Setenv(k, v)
	}
	cases := []struct {
		name string
		vars map[string]string
	}{
		{"password", nil},
		{"token", map[string]string{"AGENT_GATEWAY_FORGEJO_TOKEN": canary + "-token", "AGENT_GATEWAY_FORGEJO_USERNAME": "", "AGENT_GATEWAY_FORGEJO_TOKEN_FILE": tokenFile}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.vars {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			code := Main([]string{"serve", "--config-test"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			all := out.String() + errOut.String()
			if strings.Contains(all, canary) {
				t.Fatalf("--config-test printed a secret:\n%s", all)
			}
			if !strings.HasPrefix(out.String(), "configuration OK\n") {
				t.Fatalf("output:\n%s", out.String())
			}
			for _, s := range settings {
				if !strings.Contains(out.String(), "  "+s.key+" ") {
					t.Errorf("key %s not printed", s.key)
				}
			}
			for _, line := range []string{"database.url", "ratelimit.redis_url", "forgejo.password"} {
				if !containsLine(out.String(), line, "(set)") && tc.name == "password" {
					t.Errorf("%s not shown as (set)", line)
				}
			}
		})
	}
}

func containsLine(out, key, value string) bool {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == key && f[1] == value {
			return true
		}
	}
	return false
}

func TestConfigTestReportsProblems(t *testing.T) {
	t.Setenv("AGENT_GATEWAY_LISTEN", "nohostport")
	t.Setenv("AGENT_GATEWAY_FORGEJO_ORIGIN", "http://forge.example")
	var out, errOut bytes.Buffer
	code := Main([]string{"serve", "--config-test"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "listen (AGENT_GATEWAY_LISTEN)") || !strings.Contains(errOut.String(), "forgejo.origin (AGENT_GATEWAY_FORGEJO_ORIGIN)") {
		t.Fatalf("stderr:\n%s", errOut.String())
	}
	if strings.Contains(out.String(), "configuration OK") {
		t.Fatal("printed OK for a bad configuration")
	}
}
