package oauth

import (
	"strings"
	"testing"
)

// TestRedirectRule pins the one redirect URI rule: https, loopback http,
// reverse-DNS private-use schemes, single-label schemes only when listed,
// and never a scheme a browser or an operating system runs.
func TestRedirectRule(t *testing.T) {
	rule := newRedirectRule([]string{"cursor", "VSCode", "my-ide"})
	for _, tc := range []struct {
		uri  string
		want string // a fragment of the refusal; "" accepts
	}{
		{"https://app.example/cb", ""},
		{"https://app.example:8443/cb?x=1", ""},
		{"http://127.0.0.1:33418/", ""},
		{"http://[::1]/cb", ""},
		{"http://localhost:6274/oauth/callback", ""},
		{"http://app.example/cb", "only on loopback"},
		{"https:/cb", "no host"},
		{"https://app.example/cb#x", "fragment"},
		{"https://app.example/cb#", "fragment"},
		{"https://u:p@app.example/cb", "user information"},
		{"http://evil@127.0.0.1:9/cb", "user information"},
		{"/cb", "not an absolute URL"},
		{"https://app.example/c b", "not printable ASCII"},
		{"https://moc.elpmaxe\u202e.evil.example/cb", "not printable ASCII"},
		{"https://app.example/cb\u200b", "not printable ASCII"},
		{"https://app.example/\x00cb", "not printable ASCII"},
		{"https://app.example/\x7fcb", "not printable ASCII"},
		{"https://bücher.example/cb", "not printable ASCII"},
		{"https://xn--bcher-kva.example/c%20b", ""},
		{"https://app.example/" + strings.Repeat("a", maxRedirectURIBytes), "longer than"},

		// The host is a DNS name or an IP literal: Go's parser takes
		// these, and they would reach the consent page's CSP.
		{"https://a;b/cb", "neither a DNS name nor an IP address"},
		{"https://a'b/cb", "neither a DNS name nor an IP address"},
		{"https://a,b/cb", "neither a DNS name nor an IP address"},
		{"https://a%3Bb.example/cb", "not an absolute URL"},
		{"https://a_b.example/cb", "neither a DNS name nor an IP address"},
		{"https://-a.example/cb", "neither a DNS name nor an IP address"},
		{"https://a..example/cb", "neither a DNS name nor an IP address"},
		{"https://" + strings.Repeat("a", 64) + ".example/cb", "neither a DNS name nor an IP address"},
		{"http://[fe80::1%25eth0]/cb", "neither a DNS name nor an IP address"},
		{"cursor://a;b/cb", "neither a DNS name nor an IP address"},
		{"https://APP.example/cb", ""},
		{"https://192.0.2.7:8443/cb", ""},
		{"https://[2001:db8::1]/cb", ""},
		{"https://" + strings.Repeat("a", 63) + ".example/cb", ""},

		// Reverse-DNS private-use schemes (RFC 8252 §7.1) need no listing.
		{"com.example.app:/oauth2redirect", ""},
		{"com.example.agw-test:/oauth/callback", ""},
		{"io.github.some-one.tool://cb/x", ""},
		{"com.example.app:cb", "not an absolute URL"},
		{"com.example.app:", "needs a path"},
		{"com.example.app:/cb#x", "fragment"},
		{"com..app:/cb", "reverse-DNS"},
		{"com.example-:/cb", "reverse-DNS"},
		{"com.-example:/cb", "reverse-DNS"},
		{"x-apple.systempreferences:/com.apple.preference", "reverse-DNS"},
		{"z39.50r://host/db", "reverse-DNS"},
		{"com+x.example:/cb", "reverse-DNS"},
		{"vnd.sun.star.script:/Standard.Module1.Main", "never a redirect target"},
		{"vnd.libreoffice.command:/x", "never a redirect target"},
		{"iris.beep://host/x", "never a redirect target"},

		// Single-label schemes only when listed (case-insensitive).
		{"cursor://anysphere.cursor-mcp/oauth/callback", ""},
		{"vscode://vscode.github-authentication/did-authenticate", ""},
		{"VSCODE://x/cb", ""},
		{"my-ide:/cb", ""},
		{"cursor://u@anysphere.cursor-mcp/oauth/callback", "user information"},
		{"windsurf://codeium/cb", "oauth.app_redirect_schemes"},
		{"myapp:/cb", "oauth.app_redirect_schemes"},
		{"web+mcp:/cb", "oauth.app_redirect_schemes"},

		// Never, listed or not: script, local files, browser internals,
		// and the operating system's handlers.
		{"javascript:alert(1)", "not an absolute URL"},
		{"JavaScript://x/%0aalert(1)", "never a redirect target"},
		{"vbscript://x/y", "never a redirect target"},
		{"data:/text/html,x", "never a redirect target"},
		{"file:///etc/passwd", "never a redirect target"},
		{"blob:/x", "never a redirect target"},
		{"about:/blank", "never a redirect target"},
		{"chrome-extension://abc/cb", "never a redirect target"},
		{"ms-msdt:/id%20PCWDiagnostic", "never a redirect target"},
		{"ms-msdt://x/y", "never a redirect target"},
		{"ms-officecmd:/x", "never a redirect target"},
		{"ms-cxh-full://0", "never a redirect target"},
		{"search-ms:/query=x", "never a redirect target"},
		{"search://x/y", "never a redirect target"},
		{"shell:/startup", "never a redirect target"},
		{"intent://x/#Intent;end", "fragment"},
		{"intent://x/cb", "never a redirect target"},
		{"mailto:/x", "never a redirect target"},
		{"ws://127.0.0.1/cb", "never a redirect target"},
		{"smb://host/share", "never a redirect target"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			err := rule.check(tc.uri)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want a refusal saying %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("refusal %q does not say %q", err, tc.want)
			}
		})
	}
	t.Run("the zero rule lists no single-label scheme", func(t *testing.T) {
		if err := (redirectRule{}).check("cursor://anysphere.cursor-mcp/oauth/callback"); err == nil {
			t.Fatal("accepted")
		}
		if err := (redirectRule{}).check("com.example.app:/cb"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCheckAppRedirectScheme: an operator may list single-label schemes
// of native apps, never http(s), a dotted one, a malformed one or one the
// rule refuses anyway.
func TestCheckAppRedirectScheme(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		ok     bool
	}{
		{"cursor", true}, {"vscode", true}, {"vscode-insiders", true}, {"Windsurf", true}, {"web+mcp", true}, {"app2", true},
		{"", false}, {"http", false}, {"HTTPS", false}, {"com.example.app", false}, {"2app", false}, {"cur sor", false},
		{"cursor:", false}, {"javascript", false}, {"file", false}, {"data", false}, {"ms-msdt", false}, {"ms-anything", false},
		{"search-ms", false}, {"vbscript", false},
	} {
		if err := CheckAppRedirectScheme(tc.scheme); (err == nil) != tc.ok {
			t.Errorf("CheckAppRedirectScheme(%q) = %v, want ok=%v", tc.scheme, err, tc.ok)
		}
	}
}
