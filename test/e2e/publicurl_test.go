package e2e

import (
	"strings"
	"testing"
)

// TestPublicURLStrict: public_url is published to every anonymous caller
// (metadata, WWW-Authenticate), so the binary refuses one with user
// information, a query or a fragment, even an empty one, naming the key
// and its source and never echoing the password; a plain one passes
// --config-test.
func TestPublicURLStrict(t *testing.T) {
	configTest := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		return configTestWith(t, nil, append([]string{"serve", "--config-test"}, args...)...)
	}
	for _, tc := range []struct{ name, value, why string }{
		{"user and password", "https://admin:hunter2@gw.example", "user information"},
		{"empty user information", "https://@gw.example", "user information"},
		{"query", "https://gw.example/?tenant=a", "query"},
		{"bare query", "https://gw.example?", "query"},
		{"fragment", "https://gw.example/#x", "fragment"},
		{"bare fragment", "https://gw.example#", "fragment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := configTest(t, "--public-url", tc.value)
			if code != 2 || !strings.Contains(errs, "public_url (--public-url): ") || !strings.Contains(errs, tc.why) || strings.Contains(out, "configuration OK") {
				t.Fatalf("exit %d, want 2 naming public_url and %q:\n%s%s", code, tc.why, out, errs)
			}
			if strings.Contains(out+errs, "hunter2") {
				t.Fatalf("the refusal echoes the password:\n%s%s", out, errs)
			}
		})
	}
	code, out, errs := configTest(t, "--public-url", "https://gw.example/agents/")
	if code != 0 || !strings.Contains(out, "public_url                   https://gw.example/agents\n") {
		t.Fatalf("a plain public_url: exit %d\n%s%s", code, out, errs)
	}
}
