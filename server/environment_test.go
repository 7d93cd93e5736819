package server

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestUnknownVariables: a variable in a namespace the gateway owns that no
// setting (or other reader) has is refused by name, never by value, with
// the nearest name when one is near, and reported with every other
// problem; variables of other programs, including HeyAira's own outside
// HEYAIRA_GITHUB_*, and Kubernetes' Service variables pass.
func TestUnknownVariables(t *testing.T) {
	const canary = "CANARY-ENV-77d1"
	cases := []struct {
		name string
		vars map[string]string
		want []string // the problems, exactly, in order
	}{
		{"misspelt setting", map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGN": "https://forge.example"},
			[]string{"AGENT_GATEWAY_FORGEJO_ORIGN (environment): unknown variable; did you mean AGENT_GATEWAY_FORGEJO_ORIGIN?"}},
		{"empty misspelt setting", map[string]string{"AGENT_GATEWAY_LISTN": ""},
			[]string{"AGENT_GATEWAY_LISTN (environment): unknown variable; did you mean AGENT_GATEWAY_LISTEN?"}},
		{"secret value never echoed", map[string]string{"AGENT_GATEWAY_OIDC_CLIENT_SECRT": canary},
			[]string{"AGENT_GATEWAY_OIDC_CLIENT_SECRT (environment): unknown variable; did you mean AGENT_GATEWAY_OIDC_CLIENT_SECRET?"}},
		{"nothing near", map[string]string{"AGENT_GATEWAY_COLOUR": "blue"},
			[]string{"AGENT_GATEWAY_COLOUR (environment): unknown variable"}},
		{"the App's seed name under the gateway's prefix", map[string]string{"AGENT_GATEWAY_GITHUB_APP_PRIVATE_KEY_FILE": "/k.pem"},
			[]string{"AGENT_GATEWAY_GITHUB_APP_PRIVATE_KEY_FILE (environment): unknown variable; did you mean AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE?"}},
		{"misspelt seed name", map[string]string{"HEYAIRA_GITHUB_APP_PRIVATE_KEY": "/k.pem"},
			[]string{"HEYAIRA_GITHUB_APP_PRIVATE_KEY (environment): unknown variable; did you mean HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE?"}},
		{"a Service port variable in a setting's shape but not a port", map[string]string{"AGENT_GATEWAY_METRICS_PORT": "9090"},
			[]string{"AGENT_GATEWAY_METRICS_PORT (environment): unknown variable"}},
		{"sorted, with every other problem", map[string]string{"AGENT_GATEWAY_ZZZ": "1", "AGENT_GATEWAY_AAA": "1", "AGENT_GATEWAY_LOG_LEVEL": "loud"},
			[]string{"AGENT_GATEWAY_AAA (environment): unknown variable", "AGENT_GATEWAY_ZZZ (environment): unknown variable", "log.level (AGENT_GATEWAY_LOG_LEVEL): want debug, info, warn or error"}},
		{"known variables that are not settings", map[string]string{
			"AGENT_GATEWAY_TOKEN": canary, "AGENT_GATEWAY_TEST_POSTGRES_URL": "postgres://x", "AGENT_GATEWAY_TEST_REDIS_URL": "redis://x",
		}, nil},
		{"HeyAira's other variables", map[string]string{"HEYAIRA_F1_E2E_DATABASE_URL": "postgresql://x", "HEYAIRA_GITHUBX": "1"}, nil},
		{"Kubernetes Service variables", map[string]string{
			"AGENT_GATEWAY_SERVICE_HOST": "10.96.0.12", "AGENT_GATEWAY_SERVICE_PORT": "80", "AGENT_GATEWAY_SERVICE_PORT_HTTP": "80",
			"AGENT_GATEWAY_SERVICE_PORT_METRICS": "9090", "AGENT_GATEWAY_PORT": "tcp://10.96.0.12:80",
			"AGENT_GATEWAY_PORT_80_TCP": "tcp://10.96.0.12:80", "AGENT_GATEWAY_PORT_80_TCP_PROTO": "tcp",
			"AGENT_GATEWAY_PORT_80_TCP_PORT": "80", "AGENT_GATEWAY_PORT_80_TCP_ADDR": "10.96.0.12",
			"AGENT_GATEWAY_METRICS_SERVICE_HOST": "fd00::12", "AGENT_GATEWAY_METRICS_PORT": "tcp://[fd00::12]:9090",
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, nil, tc.vars)
			var got []string
			if err != nil {
				got = problems(t, nil, tc.vars)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("problems\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestUnknownVariableThroughMain: the default environment is the
// process's, so serve --config-test refuses a misspelt variable set there.
func TestUnknownVariableThroughMain(t *testing.T) {
	t.Setenv("AGENT_GATEWAY_DATA_DIRECTORY", t.TempDir())
	var out, errOut bytes.Buffer
	code := Main([]string{"serve", "--config-test"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "AGENT_GATEWAY_DATA_DIRECTORY (environment): unknown variable") || out.Len() > 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestGitHubAppVariables: each App setting is read from its key's
// AGENT_GATEWAY_* variable and from its HEYAIRA_* one; both set to
// one value is that value, to different values a problem naming both.
func TestGitHubAppVariables(t *testing.T) {
	key, other := rsaKeyFile(t), rsaKeyFile(t)
	cases := []struct {
		name    string
		vars    map[string]string
		id      int64
		problem string
	}{
		{"key names", map[string]string{"AGENT_GATEWAY_GITHUB_APP_ID": "7", "AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE": key}, 7, ""},
		{"seed names", map[string]string{"HEYAIRA_GITHUB_APP_ID": "8", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": key}, 8, ""},
		{"mixed", map[string]string{"AGENT_GATEWAY_GITHUB_APP_ID": "9", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": key}, 9, ""},
		{"both, agreeing", map[string]string{"AGENT_GATEWAY_GITHUB_APP_ID": "10", "HEYAIRA_GITHUB_APP_ID": "10", "AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE": key, "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": key}, 10, ""},
		{"one empty", map[string]string{"AGENT_GATEWAY_GITHUB_APP_ID": "", "HEYAIRA_GITHUB_APP_ID": "11", "AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE": key}, 11, ""},
		{"ids differ", map[string]string{"AGENT_GATEWAY_GITHUB_APP_ID": "1", "HEYAIRA_GITHUB_APP_ID": "2", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": key}, 0,
			"github.app_id (AGENT_GATEWAY_GITHUB_APP_ID, HEYAIRA_GITHUB_APP_ID): set to different values; set one of them"},
		{"key files differ", map[string]string{"HEYAIRA_GITHUB_APP_ID": "3", "AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE": key, "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": other}, 0,
			"github.private_key_file (AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE, HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE): set to different values; set one of them"},
		{"a bad value names the variable it came from", map[string]string{"HEYAIRA_GITHUB_APP_ID": "x"}, 0, "github.app_id (HEYAIRA_GITHUB_APP_ID): want a positive integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := load(t, nil, tc.vars)
			if tc.problem != "" {
				got := problems(t, nil, tc.vars)
				if len(got) != 1 || !strings.HasPrefix(got[0], tc.problem) {
					t.Fatalf("problems %q, want one starting %q", got, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Config.GitHubAppID != tc.id || l.Config.GitHubAppKeyFile != key {
				t.Fatalf("app %d key %s", l.Config.GitHubAppID, l.Config.GitHubAppKeyFile)
			}
		})
	}
}

// TestClosest pins when a name is near enough to suggest: a third of its
// distinctive part, at least one edit.
func TestClosest(t *testing.T) {
	keys := []string{"listen", "log.level", "metrics.listen", "AGENT_GATEWAY_LISTEN"}
	for _, tc := range []struct{ name, distinct, want string }{
		{"lisen", "lisen", "listen"},
		{"listen.", "listen.", "listen"},
		{"metric.listen", "metric.listen", "metrics.listen"},
		{"color", "color", ""},
		{"AGENT_GATEWAY_LISTN", "LISTN", "AGENT_GATEWAY_LISTEN"},
		{"AGENT_GATEWAY_LIST", "LIST", ""},
		{"AGENT_GATEWAY_X", "X", ""},
	} {
		if got := closest(tc.name, tc.distinct, keys); got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"listen", "lisen", 1}, {"ab", "ba", 2}} {
		if d := editDistance(tc.a, tc.b); d != tc.d || editDistance(tc.b, tc.a) != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// TestUnknownYAMLKeySuggests: a misspelt YAML key is told its nearest key.
func TestUnknownYAMLKeySuggests(t *testing.T) {
	got := problems(t, []string{"--config", writeFile(t, "c.yaml", "lisen: 127.0.0.1:1\nforgejo:\n  orign: https://f.example\n  colour: blue\n")}, nil)
	want := []string{
		"forgejo.colour (", "forgejo.orign (", "lisen (",
	}
	if len(got) != len(want) {
		t.Fatalf("problems %q", got)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d = %q, want it to start %q", i, got[i], w)
		}
	}
	for i, end := range []string{"unknown key", "unknown key; did you mean forgejo.origin?", "unknown key; did you mean listen?"} {
		if !strings.HasSuffix(got[i], end) {
			t.Errorf("problem %q does not end %q", got[i], end)
		}
	}
}
