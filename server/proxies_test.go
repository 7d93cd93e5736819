package server

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestTrustedProxiesPlausible pins what the union check lets through: the
// private ranges together, a /8 and a /32 exactly, and anything with
// trust_all_forwarded; and that the switch is what lets a wide list load.
func TestTrustedProxiesPlausible(t *testing.T) {
	for _, v := range []string{
		"10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10",
		"10.0.0.0/8,10.1.0.0/16",            // contained, not added
		"2001:db8::/32,2001:db8:1::/48,::1", // a /32 and what is in it
		"10.0.0.0/8,12.0.0.0/8",             // two apart /8s: at the total
		"192.0.2.1,192.0.2.2,192.0.2.3",
	} {
		cfg, err := load(t, nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": v})
		if err != nil {
			t.Errorf("%s refused: %v", v, err)
			continue
		}
		if cfg.Config.TrustAllForwarded {
			t.Errorf("%s: trust_all_forwarded on by default", v)
		}
	}
	wide := "0.0.0.0/1,128.0.0.0/1,::/1,8000::/1"
	cfg, err := load(t, nil, map[string]string{"AGENT_GATEWAY_TRUSTED_PROXIES": wide, "AGENT_GATEWAY_TRUST_ALL_FORWARDED": "true"})
	if err != nil {
		t.Fatalf("with trust_all_forwarded: %v", err)
	}
	if !cfg.Config.TrustAllForwarded || len(cfg.Config.TrustedProxies) != 4 {
		t.Fatalf("config %+v", cfg.Config)
	}
	if w := trustAllWarning(cfg.Config.TrustedProxies); !strings.Contains(w, "TRUST_ALL_FORWARDED") || !strings.Contains(w, "0.0.0.0/1,128.0.0.0/1,::/1,8000::/1") {
		t.Fatalf("warning %q", w)
	}
}

// TestMergeRanges pins the union: overlapping and adjacent ranges merge,
// others stay apart, in address order.
func TestMergeRanges(t *testing.T) {
	got := []string{}
	for _, r := range mergeRanges(prefixes(t, "10.0.0.0/9", "192.0.2.0/24", "10.128.0.0/9", "10.1.0.0/16", "192.0.4.0/24")) {
		got = append(got, r.first.String()+"-"+r.last.String())
	}
	want := []string{"10.0.0.0-10.255.255.255", "192.0.2.0-192.0.2.255", "192.0.4.0-192.0.4.255"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if p := checkTrustedProxies(prefixes(t, "255.255.255.255/32", "255.0.0.0/8")); p != nil {
		t.Fatalf("the last /8: %v", p)
	}
}

func prefixes(t *testing.T, s ...string) []netip.Prefix {
	t.Helper()
	out := make([]netip.Prefix, 0, len(s))
	for _, v := range s {
		out = append(out, netip.MustParsePrefix(v))
	}
	return out
}
