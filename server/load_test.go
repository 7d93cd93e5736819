package server

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rsaKeyFile writes a fresh RSA private key as PEM, as a GitHub App key
// file holds it, and returns its path.
func rsaKeyFile(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "app.pem", string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
}

// environ returns an Environ of a fixed map.
func environ(m map[string]string) func() []string {
	return func() []string {
		var out []string
		for k, v := range m {
			out = append(out, k+"="+v)
		}
		return out
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, args []string, vars map[string]string) (*Loaded, error) {
	t.Helper()
	var stderr bytes.Buffer
	return Load(LoadOptions{Args: args, Environ: environ(vars), Stderr: &stderr})
}

func TestLoadZeroConfig(t *testing.T) {
	l, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, "127.0.0.1:8080"},
		{"public_url", c.PublicURL, "http://127.0.0.1:8080"},
		{"data_dir", c.DataDir, "./data"},
		{"database.url", c.DatabaseURL, ""},
		{"forgejo.origin", c.ForgejoOrigin == nil, true},
		{"github.api_origin", c.GitHubAPIOrigin.String(), "https://api.github.com"},
		{"metrics.listen", c.MetricsListen, ""},
		{"ratelimit.redis_url", c.RedisURL, ""},
		{"cursor.secret_file", c.CursorSecretFile, ""},
		{"tls.cert_file", c.TLSCertFile, ""},
		{"tls.key_file", c.TLSKeyFile, ""},
		{"trusted_proxies", len(c.TrustedProxies), 0},
		{"http.client_ipv6_prefix", c.ClientIPv6Prefix, 64},
		{"log.level", c.LogLevel, "info"},
		{"forgejo.io_timeout", c.ForgejoIOTimeout, 30 * time.Second},
		{"ratelimit.read_per_minute", c.ReadPerMinute, 600},
		{"ratelimit.write_per_minute", c.WritePerMinute, 60},
		{"public origin", c.PublicOrigin(), "http://127.0.0.1:8080"},
		{"config file", l.ConfigFile, ""},
		{"config test", l.ConfigTest, false},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

// TestEnvNames pins the environment variables of the keys
// docs/architecture.md#configuration fixes and of the GitHub App, whose
// HEYAIRA_* names deployments set: scripts
// rely on them. Every key has its AGENT_GATEWAY_* variable, and no
// variable is read for two keys.
func TestEnvNames(t *testing.T) {
	fixed := map[string][]string{
		"listen": {"AGENT_GATEWAY_LISTEN"}, "public_url": {"AGENT_GATEWAY_PUBLIC_URL"}, "data_dir": {"AGENT_GATEWAY_DATA_DIR"},
		"database.url": {"AGENT_GATEWAY_DATABASE_URL"}, "forgejo.origin": {"AGENT_GATEWAY_FORGEJO_ORIGIN"},
		"github.api_origin": {"AGENT_GATEWAY_GITHUB_API_ORIGIN"}, "metrics.listen": {"AGENT_GATEWAY_METRICS_LISTEN"},
		"ratelimit.redis_url": {"AGENT_GATEWAY_RATELIMIT_REDIS_URL"}, "cursor.secret_file": {"AGENT_GATEWAY_CURSOR_SECRET_FILE"},
		"tls.cert_file": {"AGENT_GATEWAY_TLS_CERT_FILE"}, "tls.key_file": {"AGENT_GATEWAY_TLS_KEY_FILE"},
		"trusted_proxies":         {"AGENT_GATEWAY_TRUSTED_PROXIES"},
		"github.app_id":           {"AGENT_GATEWAY_GITHUB_APP_ID", "HEYAIRA_GITHUB_APP_ID"},
		"github.private_key_file": {"AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE"},
	}
	byKey := map[string]setting{}
	envs := map[string]string{}
	for _, s := range settings {
		byKey[s.key] = s
		if !strings.HasPrefix(s.Env(), "AGENT_GATEWAY_") {
			t.Errorf("%s: env %s", s.key, s.Env())
		}
		for _, name := range s.envNames() {
			if other, dup := envs[name]; dup {
				t.Errorf("%s and %s share %s", s.key, other, name)
			}
			envs[name] = s.key
		}
		if s.envOnly && s.flag != "" {
			t.Errorf("secret %s has a flag", s.key)
		}
	}
	for _, o := range otherVariables {
		if key, dup := envs[o.name]; dup {
			t.Errorf("%s is both %s's variable and one read by %s", o.name, key, o.readBy)
		}
	}
	for key, want := range fixed {
		s, ok := byKey[key]
		if !ok {
			t.Errorf("key %s missing from settings", key)
			continue
		}
		if !slices.Equal(s.envNames(), want) {
			t.Errorf("%s: env %v, want %v", key, s.envNames(), want)
		}
	}
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, "c.yaml", "listen: 127.0.0.1:1001\ndata_dir: /from/yaml\nforgejo:\n  origin: https://yaml.example\nratelimit:\n  read_per_minute: 11\n")
	cases := []struct {
		name    string
		args    []string
		vars    map[string]string
		listen  string
		dataDir string
		origin  string
		read    int
	}{
		{"YAML over defaults", []string{"--config", file}, nil, "127.0.0.1:1001", "/from/yaml", "https://yaml.example", 11},
		{"config file from the environment", nil, map[string]string{"AGENT_GATEWAY_CONFIG": file}, "127.0.0.1:1001", "/from/yaml", "https://yaml.example", 11},
		{"environment over YAML", []string{"--config", file}, map[string]string{
			"AGENT_GATEWAY_LISTEN": "127.0.0.1:2002", "AGENT_GATEWAY_FORGEJO_ORIGIN": "https://env.example", "AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "22",
		}, "127.0.0.1:2002", "/from/yaml", "https://env.example", 22},
		{"flags over environment", []string{"--config", file, "--listen", "127.0.0.1:3003", "--forgejo-origin=https://flag.example", "--data-dir", "/from/flag"}, map[string]string{
			"AGENT_GATEWAY_LISTEN": "127.0.0.1:2002", "AGENT_GATEWAY_FORGEJO_ORIGIN": "https://env.example", "AGENT_GATEWAY_DATA_DIR": "/from/env",
		}, "127.0.0.1:3003", "/from/flag", "https://flag.example", 11},
		{"empty environment value does not override", []string{"--config", file}, map[string]string{"AGENT_GATEWAY_LISTEN": ""}, "127.0.0.1:1001", "/from/yaml", "https://yaml.example", 11},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := load(t, tc.args, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			c := l.Config
			if c.Listen != tc.listen || c.DataDir != tc.dataDir || c.ForgejoOrigin.String() != tc.origin || c.ReadPerMinute != tc.read {
				t.Fatalf("listen %s data_dir %s origin %v read %d", c.Listen, c.DataDir, c.ForgejoOrigin, c.ReadPerMinute)
			}
			if c.PublicURL != "http://"+tc.listen {
				t.Errorf("derived public_url %s", c.PublicURL)
			}
		})
	}
}

func TestLoadDerivedAndParsed(t *testing.T) {
	cert := writeFile(t, "cert.pem", "x")
	key := writeFile(t, "key.pem", "x")
	appKey := rsaKeyFile(t)
	cases := []struct {
		name  string
		args  []string
		vars  map[string]string
		check func(*testing.T, Config)
	}{
		{"explicit public_url kept, trailing slash dropped", []string{"--public-url", "https://gw.example/"}, nil, func(t *testing.T, c Config) {
			if c.PublicURL != "https://gw.example" || c.PublicOrigin() != "https://gw.example" {
				t.Fatal(c.PublicURL)
			}
		}},
		{"TLS makes the derived public_url https", nil, map[string]string{"AGENT_GATEWAY_TLS_CERT_FILE": cert, "AGENT_GATEWAY_TLS_KEY_FILE": key}, func(t *testing.T, c Config) {
			if c.PublicURL != "https://127.0.0.1:8080" {
				t.Fatal(c.PublicURL)
			}
		}},
		{"trusted proxies", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": " 10.0.0.0/8, 192.0.2.1,::1, ::ffff:10.1.1.1 ,10.1.2.3/8"}, func(t *testing.T, c Config) {
			want := []netip.Prefix{
				netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("::1/128"),
				netip.MustParsePrefix("10.1.1.1/32"), netip.MustParsePrefix("10.0.0.0/8"),
			}
			if !slices.Equal(c.TrustedProxies, want) {
				t.Fatal(c.TrustedProxies)
			}
		}},
		{"client IPv6 prefix", nil, map[string]string{"AGENT_GATEWAY_HTTP_CLIENT_IPV6_PREFIX": "56"}, func(t *testing.T, c Config) {
			if c.ClientIPv6Prefix != 56 {
				t.Fatal(c.ClientIPv6Prefix)
			}
		}},
		{"client IPv6 prefix at its bounds", []string{"--config", writeFile(t, "p.yaml", "http:\n  client_ipv6_prefix: 128\n")}, nil, func(t *testing.T, c Config) {
			if c.ClientIPv6Prefix != 128 {
				t.Fatal(c.ClientIPv6Prefix)
			}
		}},
		{"allowed origins", nil, map[string]string{"AGENT_GATEWAY_ALLOWED_ORIGINS": "https://a.example, http://localhost:5173/"}, func(t *testing.T, c Config) {
			if !slices.Equal(c.AllowedOrigins, []string{"https://a.example", "http://localhost:5173"}) {
				t.Fatal(c.AllowedOrigins)
			}
		}},
		{"client metadata ports", nil, map[string]string{"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_PORTS": "8443, 9443"}, func(t *testing.T, c Config) {
			if !slices.Equal(c.OAuthClientMetadataPorts, []int{8443, 9443}) {
				t.Fatal(c.OAuthClientMetadataPorts)
			}
		}},
		{"GitHub names kept from the seed", nil, map[string]string{"HEYAIRA_GITHUB_APP_ID": "123", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": appKey}, func(t *testing.T, c Config) {
			if c.GitHubAppID != 123 || c.GitHubAppKeyFile != appKey {
				t.Fatal(c.GitHubAppID, c.GitHubAppKeyFile)
			}
		}},
		{"loopback http origin", nil, map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": "http://[::1]:3000"}, func(t *testing.T, c Config) {
			if c.ForgejoOrigin.String() != "http://[::1]:3000" {
				t.Fatal(c.ForgejoOrigin)
			}
		}},
		{"non-flag arguments kept", []string{"--listen", "127.0.0.1:1", "extra", "args"}, nil, func(t *testing.T, c Config) {}},
		{"listen on every interface, highest port", []string{"--listen", ":65535", "--metrics-listen", "[::1]:1"}, nil, func(t *testing.T, c Config) {
			if c.Listen != ":65535" || c.MetricsListen != "[::1]:1" {
				t.Fatal(c.Listen, c.MetricsListen)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := load(t, tc.args, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, l.Config)
		})
	}
}

// problems loads and returns the reported problems (failing if none).
func problems(t *testing.T, args []string, vars map[string]string) []string {
	t.Helper()
	_, err := load(t, args, vars)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *ConfigError", err)
	}
	return ce.Problems
}

// TestLoadReportsEveryProblem: one broken file plus bad environment and
// flags yields one report naming every key at fault, and no secret value.
func TestLoadReportsEveryProblem(t *testing.T) {
	const canary = "CANARY-SECRET-91b2"
	file := writeFile(t, "bad.yaml", `
lisen: 127.0.0.1:1
listen: nohostport
forgejo:
  origin: http://forge.example
  token: `+canary+`
  password: `+canary+`
  colour: blue
ratelimit:
  read_per_minute: -5
  write_per_minute: many
log:
  level: loud
extra:
  nested: 1
tls:
  cert_file: /does/not/exist.pem
github:
  api_origin:
    nested: mapping
database:
  url: mysql://user:`+canary+`@db/x
`)
	got := problems(t, []string{"--config", file, "--metrics-listen", "nope"}, map[string]string{
		"AGENT_GATEWAY_SHUTDOWN_GRACE":        "-1s",
		"AGENT_GATEWAY_RATELIMIT_REDIS_URL":   "http://:" + canary + "@redis",
		"AGENT_GATEWAY_FORGEJO_TOKEN":         canary,
		"AGENT_GATEWAY_FORGEJO_USERNAME":      "bob",
		"AGENT_GATEWAY_FORGEJO_PASSWORD_FILE": "/does/not/exist",
	})
	all := strings.Join(got, "\n")
	if strings.Contains(all, canary) {
		t.Fatalf("a problem report carries a secret value:\n%s", all)
	}
	want := []string{
		"lisen (", "listen (", "forgejo.origin (", "forgejo.token (", "forgejo.password (", "forgejo.colour (",
		"ratelimit.read_per_minute (", "ratelimit.write_per_minute (", "log.level (", "extra (",
		"github.api_origin (", "database.url (", "shutdown_grace (AGENT_GATEWAY_SHUTDOWN_GRACE)",
		"ratelimit.redis_url (AGENT_GATEWAY_RATELIMIT_REDIS_URL)", "metrics.listen (--metrics-listen)",
		"tls.cert_file/tls.key_file", "tls.cert_file:", "forgejo.token/forgejo.username", "forgejo.password_file:",
	}
	for _, w := range want {
		found := false
		for _, p := range got {
			if strings.HasPrefix(p, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem starting with %q in:\n%s", w, all)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(got), len(want), all)
	}
	for _, secret := range []string{"forgejo.token (", "forgejo.password ("} {
		for _, p := range got {
			if strings.HasPrefix(p, secret) && !strings.Contains(p, "never in YAML") {
				t.Errorf("secret-in-YAML problem does not say why: %s", p)
			}
		}
	}
}

func TestLoadProblems(t *testing.T) {
	cases := []struct {
		name string
		yaml string // "" for no file
		args []string
		vars map[string]string
		want []string // prefixes of the problems, in any order
	}{
		{"duplicate YAML key", "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", nil, nil, []string{"listen ("}},
		{"duplicate nested YAML key", "forgejo:\n  origin: https://a.example\nforgejo:\n  io_timeout: 5s\n", nil, nil, []string{"forgejo ("}},
		{"YAML syntax", "listen: [\n", nil, nil, []string{"config file "}},
		{"top level not a mapping", "- a\n- b\n", nil, nil, []string{"config file "}},
		{"missing file", "", []string{"--config", "/does/not/exist.yaml"}, nil, []string{"config file:"}},
		{"prefix given a scalar", "forgejo: https://a.example\n", nil, nil, []string{"forgejo ("}},
		{"origin with a path", "", nil, map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": "https://a.example/api"}, []string{"forgejo.origin (AGENT_GATEWAY_FORGEJO_ORIGIN)"}},
		{"plain http origin", "", nil, map[string]string{"AGENT_GATEWAY_GITHUB_API_ORIGIN": "http://api.github.com"}, []string{"github.api_origin ("}},
		{"public_url with query", "", []string{"--public-url", "https://gw.example/?x=1"}, nil, []string{"public_url (--public-url)"}},
		{"public_url with user information", "public_url: https://admin:hunter2@gw.example\n", nil, nil, []string{"public_url ("}},
		{"public_url with an empty user", "", nil, map[string]string{"AGENT_GATEWAY_PUBLIC_URL": "https://@gw.example"}, []string{"public_url (AGENT_GATEWAY_PUBLIC_URL)"}},
		{"public_url with a bare query", "", []string{"--public-url", "https://gw.example?"}, nil, []string{"public_url (--public-url)"}},
		{"public_url with a bare fragment", "", []string{"--public-url", "https://gw.example#"}, nil, []string{"public_url (--public-url)"}},
		{"bad trusted proxy", "", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8, example.com"}, []string{"trusted_proxies ("}},
		// Fail closed: a catch-all would let any caller forge its address.
		{"trusted proxies: every IPv4 address", "", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "0.0.0.0/0"}, []string{"trusted_proxies (AGENT_GATEWAY_TRUSTED_PROXIES): \"0.0.0.0/0\" trusts every address"}},
		{"trusted proxies: every IPv6 address beside a good one", "", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8, ::/0"}, []string{"trusted_proxies (AGENT_GATEWAY_TRUSTED_PROXIES): \"::/0\" trusts every address"}},
		// Judged on the union: halves that are /0 together, neighbours
		// that merge past a /8 or a /32, many narrow ranges.
		{"trusted proxies: halves of both families", "", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "0.0.0.0/1,128.0.0.0/1,::/1,8000::/1"}, []string{"trusted_proxies: together the entries trust 0.0.0.0 through 255.255.255.255", "trusted_proxies: together the entries trust :: through ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}},
		{"trusted proxies: two adjacent /8s", "", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8,11.0.0.0/8"}, []string{"trusted_proxies: together the entries trust 10.0.0.0 through 11.255.255.255, wider than a /8"}},
		{"trusted proxies: an IPv6 /31 in two /32s", "", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "2001:db8::/32,2001:db9::/32"}, []string{"trusted_proxies: together the entries trust 2001:db8:: through 2001:db9:ffff:ffff:ffff:ffff:ffff:ffff, wider than a /32"}},
		{"trusted proxies: three apart /8s", "", nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8,20.0.0.0/8,30.0.0.0/8"}, []string{"trusted_proxies: the IPv4 entries together trust more addresses than two /8 ranges"}},
		{"trusted proxies: a length-0 prefix of another address", "trusted_proxies: [\"10.1.2.3/0\"]\n", nil, nil, []string{"trusted_proxies ("}},
		{"client IPv6 prefix too short", "", nil, map[string]string{"AGENT_GATEWAY_HTTP_CLIENT_IPV6_PREFIX": "16"}, []string{"http.client_ipv6_prefix (AGENT_GATEWAY_HTTP_CLIENT_IPV6_PREFIX): want a prefix length from 32 to 128"}},
		{"client IPv6 prefix too long", "http:\n  client_ipv6_prefix: 129\n", nil, nil, []string{"http.client_ipv6_prefix ("}},
		{"client IPv6 prefix not a number", "", nil, map[string]string{"AGENT_GATEWAY_HTTP_CLIENT_IPV6_PREFIX": "/64"}, []string{"http.client_ipv6_prefix ("}},
		{"bad allowed origin", "", nil, map[string]string{"AGENT_GATEWAY_ALLOWED_ORIGINS": "gw.example"}, []string{"allowed_origins ("}},
		{"client metadata host with a scheme", "", nil, map[string]string{"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_HOSTS": "clients.example, https://x.example"}, []string{"oauth.client_metadata_hosts ("}},
		{"client metadata host with a wildcard", "", nil, map[string]string{"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_HOSTS": "*.example"}, []string{"oauth.client_metadata_hosts ("}},
		{"client metadata port out of range", "", nil, map[string]string{"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_PORTS": "8443, 70000"}, []string{"oauth.client_metadata_ports ("}},
		{"client metadata port not a number", "", nil, map[string]string{"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_PORTS": "https"}, []string{"oauth.client_metadata_ports ("}},
		{"client metadata loopback not a bool", "", nil, map[string]string{"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK": "sometimes"}, []string{"oauth.client_metadata_allow_loopback ("}},
		{"ftp allowed origin", "allowed_origins: [\"ftp://x.example\"]\n", nil, nil, []string{"allowed_origins ("}},
		{"allowed origin with a path", "", nil, map[string]string{"AGENT_GATEWAY_ALLOWED_ORIGINS": "https://ok.example, https://gw.example/app"}, []string{"allowed_origins ("}},
		{"secret files whose content New would refuse", "", nil, map[string]string{
			"HEYAIRA_GITHUB_APP_ID": "1", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": "@junk",
			"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw", "AGENT_GATEWAY_OIDC_CLIENT_SECRET_FILE": "@empty",
			"AGENT_GATEWAY_CURSOR_SECRET_FILE": "@short", "AGENT_GATEWAY_ALLOWED_ORIGINS": "ftp://x.example",
		}, []string{"github.private_key_file: ", "oidc.client_secret_file: the file is empty", "cursor.secret_file: ", "allowed_origins ("}},
		{"a secret file that does not exist is reported once", "", nil, map[string]string{
			"HEYAIRA_GITHUB_APP_ID": "1", "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": "/does/not/exist.pem",
		}, []string{"github.private_key_file: "}},
		{"invalid issuer without a client ID", "", nil, map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "ftp://idp.example"},
			[]string{"oidc.issuer (AGENT_GATEWAY_OIDC_ISSUER)", "oidc.client_id: required"}},
		{"invalid issuer, scopes without openid", "", nil, map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "http://idp.example", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw", "AGENT_GATEWAY_OIDC_SCOPES": "email"},
			[]string{"oidc.issuer (AGENT_GATEWAY_OIDC_ISSUER)", "oidc.scopes: must include openid"}},
		{"bad app id", "", nil, map[string]string{"HEYAIRA_GITHUB_APP_ID": "abc"}, []string{"github.app_id (HEYAIRA_GITHUB_APP_ID)"}},
		{"only one TLS file", "", nil, map[string]string{"AGENT_GATEWAY_TLS_KEY_FILE": "/x"}, []string{"tls.cert_file/tls.key_file", "tls.key_file:"}},
		{"empty data_dir flag", "", []string{"--data-dir", ""}, nil, []string{"data_dir (--data-dir)"}},
		// A port is 1 to 65535, in digits, for every host:port and URL key.
		{"listen port past 65535", "", []string{"--listen", "127.0.0.1:99999"}, nil, []string{"listen (--listen): want host:port with a port from 1 to 65535, not \"99999\""}},
		{"listen port 0", "listen: 127.0.0.1:0\n", nil, nil, []string{"listen ("}},
		{"listen port by service name", "", nil, map[string]string{"AGENT_GATEWAY_LISTEN": "127.0.0.1:http"}, []string{"listen (AGENT_GATEWAY_LISTEN)"}},
		{"listen port signed", "", nil, map[string]string{"AGENT_GATEWAY_LISTEN": ":+80"}, []string{"listen (AGENT_GATEWAY_LISTEN)"}},
		{"listen port empty", "", nil, map[string]string{"AGENT_GATEWAY_LISTEN": "127.0.0.1:"}, []string{"listen (AGENT_GATEWAY_LISTEN)"}},
		{"metrics.listen port past 65535", "", []string{"--metrics-listen", "[::1]:65536"}, nil, []string{"metrics.listen (--metrics-listen)"}},
		{"public_url port past 65535", "", []string{"--public-url", "https://gw.example:99999"}, nil, []string{"public_url (--public-url): the port must be from 1 to 65535"}},
		{"public_url bare colon", "", []string{"--public-url", "https://gw.example:/x"}, nil, []string{"public_url (--public-url)"}},
		{"origin port past 65535", "", nil, map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": "https://forge.example:70000"}, []string{"forgejo.origin (AGENT_GATEWAY_FORGEJO_ORIGIN)"}},
		{"tracing endpoint port 0", "", nil, map[string]string{"AGENT_GATEWAY_TRACING_OTLP_ENDPOINT": "http://127.0.0.1:0/"}, []string{"tracing.otlp_endpoint ("}},
		{"issuer port 0", "", nil, map[string]string{"AGENT_GATEWAY_OIDC_ISSUER": "https://idp.example:0", "AGENT_GATEWAY_OIDC_CLIENT_ID": "gw"}, []string{"oidc.issuer (AGENT_GATEWAY_OIDC_ISSUER): the port must be from 1 to 65535"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.yaml != "" {
				args = append([]string{"--config", writeFile(t, "c.yaml", tc.yaml)}, args...)
			}
			// "@name" stands for a file of that kind written for the case.
			contents := map[string]string{"@junk": "not a key\n", "@empty": " \n", "@short": "0123456789\n"}
			vars := map[string]string{}
			for k, v := range tc.vars {
				if c, ok := contents[v]; ok {
					v = writeFile(t, v[1:], c)
				}
				vars[k] = v
			}
			got := problems(t, args, vars)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d", got, len(tc.want))
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, w) }) {
					t.Errorf("no problem starting with %q in %q", w, got)
				}
			}
		})
	}
}

// TestParseBrowserOrigin pins what allowed_origins accepts: exactly the
// Origin a browser sends for an http(s) page.
func TestParseBrowserOrigin(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"https://gw.example", "https://gw.example", true},
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000", true},
		{"HTTPS://GW.Example:8443/", "https://gw.example:8443", true},
		{"http://[::1]:8080", "http://[::1]:8080", true},
		{"ftp://x.example", "", false},
		{"chrome-extension://abc", "", false},
		{"null", "", false},
		{"gw.example", "", false},
		{"https://", "", false},
		{"https://:443", "", false},
		{"https://u:p@gw.example", "", false},
		{"https://gw.example/app", "", false},
		{"https://gw.example/?", "", false},
		{"https://gw.example?x=1", "", false},
		{"https://gw.example#top", "", false},
		{"https://gw.example:0", "", false},
		{"https://gw.example:65536", "", false},
		{"http:gw.example", "", false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, ok := parseBrowserOrigin(c.in)
			if got != c.want || ok != c.ok {
				t.Fatalf("parseBrowserOrigin(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestLoadFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"--forgejo-token", "x"}, {"--forgejo-password=x"}} {
		if _, err := load(t, args, nil); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
