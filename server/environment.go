package server

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// envPrefix starts the environment variable of every setting (Env).
const envPrefix = "AGENT_GATEWAY_"

// checkedPrefixes are the environment namespaces the gateway owns: every
// variable in one must be a setting's or one of otherVariables, or Load
// refuses it as it refuses an unknown YAML key, since a misspelt name
// would otherwise leave its setting at the default without a word.
// HEYAIRA_ is the namespace of the product the source contracts come from
// (docs/architecture.md#where-the-rules-come-from), shared with the rest of
// it, which names other HEYAIRA_* variables; of it the gateway
// owns only the GitHub App's names, so only HEYAIRA_GITHUB_* is checked.
var checkedPrefixes = []string{envPrefix, "HEYAIRA_GITHUB_"}

// otherVariables are the variables in the checked namespaces that are not
// settings, each with what reads it.
var otherVariables = []struct{ name, readBy string }{
	{"AGENT_GATEWAY_CONFIG", "every command that loads the configuration: the YAML file, as --config"},
	{diffTokenEnv, "agent-gateway diff: the caller's bearer"},
	{"AGENT_GATEWAY_TEST_POSTGRES_URL", "the store's tests: their PostgreSQL server"},
	{"AGENT_GATEWAY_TEST_REDIS_URL", "the middleware's tests: their Redis"},
}

// environment maps environ's KEY=VALUE pairs; of a repeated name the first
// counts, as for os.Getenv.
func environment(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := env[k]; !seen {
			env[k] = v
		}
	}
	return env
}

// knownVariables are every name in the checked namespaces Load accepts.
func knownVariables() []string {
	var names []string
	for _, s := range settings {
		names = append(names, s.envNames()...)
	}
	for _, o := range otherVariables {
		names = append(names, o.name)
	}
	return names
}

// unknownVariables reports each variable of env in a checked namespace
// that nothing reads, by name only (its value may be a secret), with the
// closest known name when one is close, sorted by name.
func unknownVariables(env map[string]string) []string {
	known := knownVariables()
	var problems []string
	for name, value := range env {
		i := slices.IndexFunc(checkedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
		if i < 0 || slices.Contains(known, name) || isServiceLink(name, value) {
			continue
		}
		p := name + " (environment): unknown variable"
		if near := closest(name, strings.TrimPrefix(name, checkedPrefixes[i]), known); near != "" {
			p += "; did you mean " + near + "?"
		}
		problems = append(problems, p)
	}
	slices.Sort(problems)
	return problems
}

// envValue is the value a setting takes from env and the variable it came
// from: the first of its names set to a non-empty value. Names set to
// different values are a problem naming every name that is set.
func envValue(s setting, env map[string]string) (value, source, problem string) {
	var names, values []string
	for _, name := range s.envNames() {
		if v := env[name]; v != "" {
			names, values = append(names, name), append(values, v)
		}
	}
	if len(names) == 0 {
		return "", "", ""
	}
	for _, v := range values[1:] {
		if v != values[0] {
			return "", "", fmt.Sprintf("%s (%s): set to different values; set one of them", s.key, strings.Join(names, ", "))
		}
	}
	return values[0], names[0], ""
}

// serviceLinks are the shapes of the variables Kubernetes sets for each
// Service in a pod's namespace (enableServiceLinks, on by default), by the
// kind of value each holds: a Service named agent-gateway, as the shipped
// manifests name it, sets AGENT_GATEWAY_SERVICE_HOST,
// AGENT_GATEWAY_PORT_80_TCP_ADDR and the like in every pod beside it.
var serviceLinks = []struct {
	name  *regexp.Regexp
	value func(v string, m []string) bool
}{
	{regexp.MustCompile(`_(SERVICE_HOST|PORT_[0-9]+_(TCP|UDP|SCTP)_ADDR)$`), func(v string, _ []string) bool {
		_, err := netip.ParseAddr(v)
		return err == nil
	}},
	{regexp.MustCompile(`_(SERVICE_PORT(_[A-Z0-9_]+)?|PORT_[0-9]+_(TCP|UDP|SCTP)_PORT)$`), func(v string, _ []string) bool { return upstream.IsPort(v) }},
	{regexp.MustCompile(`_PORT_[0-9]+_(TCP|UDP|SCTP)_PROTO$`), func(v string, m []string) bool { return v == strings.ToLower(m[1]) }},
	{regexp.MustCompile(`_PORT(_[0-9]+_(TCP|UDP|SCTP))?$`), func(v string, _ []string) bool {
		proto, hostPort, ok := strings.Cut(v, "://")
		ap, err := netip.ParseAddrPort(hostPort)
		return ok && err == nil && ap.Port() != 0 && (proto == "tcp" || proto == "udp" || proto == "sctp")
	}},
}

// isServiceLink reports whether name=value is such a Kubernetes variable:
// its name has one of the shapes and its value the matching kind (an
// address, a port, a protocol or proto://address:port), so a setting
// misspelt into the shape of one is still refused.
func isServiceLink(name, value string) bool {
	for _, l := range serviceLinks {
		if m := l.name.FindStringSubmatch(name); m != nil && l.value(value, m) {
			return true
		}
	}
	return false
}

// closest returns the candidate nearest to name by edit distance when it
// is close enough to be a misspelling of it: at most a third of the
// distinctive part of name (what follows a shared prefix), and at least
// one edit. "" when none is.
func closest(name, distinct string, candidates []string) string {
	best, bestDistance := "", max(1, len(distinct)/3)+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDistance {
			best, bestDistance = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (names and keys are ASCII).
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
