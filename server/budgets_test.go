package server

import (
	"strings"
	"testing"
)

// TestBudgetKeyPrefix: an explicit ratelimit.key_prefix wins; the default
// is one per public URL — the same for the replicas of one deployment,
// another for a deployment under another URL — and is never the bare
// "agw:" every deployment shared before.
func TestBudgetKeyPrefix(t *testing.T) {
	a := Config{PublicURL: "https://gw.example"}.BudgetKeyPrefix()
	b := Config{PublicURL: "https://gw.example"}.BudgetKeyPrefix()
	c := Config{PublicURL: "https://staging.gw.example"}.BudgetKeyPrefix()
	if a != b || a == c || !strings.HasPrefix(a, "agw:") || len(a) <= len("agw:") || !strings.HasSuffix(a, ":") {
		t.Fatalf("defaults %q %q %q", a, b, c)
	}
	if got := (Config{PublicURL: "https://gw.example", RedisKeyPrefix: "prod-eu:"}).BudgetKeyPrefix(); got != "prod-eu:" {
		t.Fatalf("explicit prefix: %q", got)
	}
}

// TestKeyPrefixSetting: a prefix with a space or over 64 characters is
// refused at start, naming the key.
func TestKeyPrefixSetting(t *testing.T) {
	checkSetting(t, "ratelimit.key_prefix", func(c Config) string { return c.RedisKeyPrefix }, []settingCase{
		{"prod-eu:", "prod-eu:", true},
		{"", "", true},
		{"a b", "without spaces", false},
		{"a\tb", "without spaces", false},
		{strings.Repeat("x", 65), "64 characters", false},
		{strings.Repeat("x", 64), strings.Repeat("x", 64), true},
	})
}

// TestShutdownDrainSetting: 0s (no drain) up to 5m; negative, bare numbers
// and longer are refused.
func TestShutdownDrainSetting(t *testing.T) {
	checkSetting(t, "shutdown_drain", func(c Config) string { return c.ShutdownDrain.String() }, []settingCase{
		{"0s", "0s", true},
		{"15s", "15s", true},
		{"5m", "5m0s", true},
		{"-1s", "from 0s to 5m", false},
		{"6m", "from 0s to 5m", false},
		{"15", "from 0s to 5m", false},
	})
}
