package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agent-gateway/agent-gateway/upstream/github"
)

// LoadOptions are the inputs of Load, injectable for tests.
type LoadOptions struct {
	Command string          // the subcommand its --help names; "serve" by default
	Args    []string        // flags after the subcommand
	Environ func() []string // the KEY=VALUE environment; os.Environ by default
	Stdout  io.Writer       // --help output; os.Stdout by default
	Stderr  io.Writer       // flag errors and their usage; os.Stderr by default
}

// Loaded is a loaded configuration plus what the command line asked for.
type Loaded struct {
	Config     Config
	ConfigFile string
	ConfigTest bool
	Rest       []string // non-flag arguments
}

// Load builds the configuration: defaults, then the YAML file (--config or
// AGENT_GATEWAY_CONFIG), then the settings' environment variables, then
// flags. Every problem is collected and reported at once, each naming its
// key (or the unknown variable), so an operator fixes a broken file in one
// pass.
func Load(o LoadOptions) (*Loaded, error) {
	if o.Environ == nil {
		o.Environ = os.Environ
	}
	env := environment(o.Environ())
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Command == "" {
		o.Command = "serve"
	}
	std := Stdio{Out: o.Stdout, Err: o.Stderr}
	out := &Loaded{Config: Default()}
	fs := newCommandFlags(o.Command)
	fs.StringVar(&out.ConfigFile, "config", env["AGENT_GATEWAY_CONFIG"], "YAML configuration file")
	fs.BoolVar(&out.ConfigTest, "config-test", false, "validate the configuration, print it without secrets, and exit")
	flagValues := map[string]*string{}
	for _, s := range settings {
		if s.flag != "" {
			flagValues[s.key] = fs.String(s.flag, "", s.help+" ("+s.key+")")
		}
	}
	if err := parseCommandFlags(fs, o.Args, std); err != nil {
		return nil, err
	}
	out.Rest = fs.Args()
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })

	var problems []string
	// given records each key set to a non-empty value, parsed or not (the
	// last source wins), so the checks across keys still run when a value
	// is refused: an invalid oidc.issuer is reported together with the
	// oidc.client_id it requires, not after it is fixed.
	given := map[string]bool{}
	apply := func(s setting, source, v string) {
		given[s.key] = v != ""
		if err := s.set(&out.Config, v); err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s): %v", s.key, source, err))
		}
	}
	if out.ConfigFile != "" {
		values, errs := readYAML(out.ConfigFile)
		problems = append(problems, errs...)
		for _, s := range settings {
			if v, ok := values[s.key]; ok {
				if s.envOnly {
					problems = append(problems, fmt.Sprintf("%s (%s): a secret; set it with %s or a *_file key, never in YAML", s.key, out.ConfigFile, s.Env()))
					continue
				}
				apply(s, out.ConfigFile, v)
			}
		}
	}
	problems = append(problems, unknownVariables(env)...)
	for _, s := range settings {
		v, source, problem := envValue(s, env)
		switch {
		case problem != "":
			given[s.key] = true
			problems = append(problems, problem)
		case v != "":
			apply(s, source, v)
		}
	}
	for _, s := range settings {
		if s.flag != "" && setFlags[s.flag] {
			apply(s, "--"+s.flag, *flagValues[s.key])
		}
	}
	problems = append(problems, out.Config.validate()...)
	problems = append(problems, out.Config.validateOIDC(given)...)
	problems = append(problems, out.Config.validateSecretFiles()...)
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	return out, nil
}

// ConfigError lists every configuration problem found.
type ConfigError struct{ Problems []string }

func (e *ConfigError) Error() string {
	return "invalid configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

// readYAML flattens a YAML mapping into dotted keys with scalar (or
// comma-joined list) values, reporting unknown, repeated and non-scalar
// keys.
func readYAML(path string) (map[string]string, []string) {
	data, err := readFileBounded(path, maxConfigFileBytes)
	if err != nil {
		return nil, []string{fmt.Sprintf("config file: %v", err)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, []string{fmt.Sprintf("config file %s: %v", path, err)}
	}
	known := map[string]bool{}
	prefixes := map[string]bool{}
	var keys []string
	for _, s := range settings {
		known[s.key] = true
		keys = append(keys, s.key)
		for i := range s.key {
			if s.key[i] == '.' {
				prefixes[s.key[:i]] = true
			}
		}
	}
	values := map[string]string{}
	var problems []string
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			// yaml.v3 keeps both copies of a repeated key in a node; the
			// later one would silently win (or a repeated section merge).
			if seen[k] {
				problems = append(problems, fmt.Sprintf("%s (%s line %d): duplicate key", key, path, n.Content[i].Line))
				continue
			}
			seen[k] = true
			switch {
			case v.Kind == yaml.MappingNode && prefixes[key]:
				walk(key, v)
			case !known[key]:
				p := fmt.Sprintf("%s (%s line %d): unknown key", key, path, n.Content[i].Line)
				if near := closest(key, key, keys); near != "" {
					p += "; did you mean " + near + "?"
				}
				problems = append(problems, p)
			case v.Kind == yaml.ScalarNode:
				values[key] = v.Value
			case v.Kind == yaml.SequenceNode:
				var items []string
				for _, item := range v.Content {
					items = append(items, item.Value)
				}
				values[key] = strings.Join(items, ",")
			default:
				problems = append(problems, fmt.Sprintf("%s (%s line %d): want a value, not a mapping", key, path, v.Line))
			}
		}
	}
	if len(root.Content) == 1 && root.Content[0].Kind == yaml.MappingNode {
		walk("", root.Content[0])
	} else if len(root.Content) > 0 {
		problems = append(problems, fmt.Sprintf("config file %s: the top level must be a mapping", path))
	}
	sort.Strings(problems)
	return values, problems
}

// validate checks relations between keys and fills derived defaults.
func (c *Config) validate() []string {
	var problems []string
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		problems = append(problems, "tls.cert_file/tls.key_file: set both or neither")
	}
	if !c.publicURLExplicit {
		scheme := "http"
		if c.TLSCertFile != "" {
			scheme = "https"
		}
		c.PublicURL = scheme + "://" + c.Listen
	}
	if !c.TrustAllForwarded {
		problems = append(problems, checkTrustedProxies(c.TrustedProxies)...)
	}
	if c.ForgejoToken != "" && c.ForgejoUsername != "" {
		problems = append(problems, "forgejo.token/forgejo.username: choose a token or Basic credentials, not both")
	}
	for _, f := range []struct{ key, path string }{{"forgejo.token_file", c.ForgejoTokenFile}, {"forgejo.password_file", c.ForgejoPassFile}, {"tls.cert_file", c.TLSCertFile}, {"tls.key_file", c.TLSKeyFile}, {"github.private_key_file", c.GitHubAppKeyFile}, {"oidc.client_secret_file", c.OIDCClientSecretFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", f.key, errors.Unwrap(err)))
		}
	}
	return problems
}

// validateSecretFiles reads the secret files New will use and reports what
// New would refuse in them — a GitHub App key that is not an RSA PEM key,
// an empty OIDC client secret, a cursor secret too short — so those come
// in the same report as every other problem instead of one start later.
// A file that does not exist is validate's problem, reported once. The
// contents never enter a message.
func (c *Config) validateSecretFiles() []string {
	exists := func(path string) bool {
		_, err := os.Stat(path)
		return path != "" && err == nil
	}
	var problems []string
	if c.GitHubAppID != 0 && exists(c.GitHubAppKeyFile) {
		if _, err := github.LoadApp(c.GitHubAppID, c.GitHubAppKeyFile); err != nil {
			problems = append(problems, "github.private_key_file: "+err.Error())
		}
	}
	if exists(c.OIDCClientSecretFile) {
		if _, err := oidcClientSecret(*c); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				problems = append(problems, ce.Problems...)
			}
		}
	}
	if exists(c.CursorSecretFile) {
		if _, err := loadCursorSecret(*c); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				problems = append(problems, ce.Problems...)
			}
		}
	}
	return problems
}
