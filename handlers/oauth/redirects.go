package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// The one rule for redirect URIs (docs/architecture.md#authorization-server):
// at registration, in a client metadata document, and for the redirect_uri
// of an authorization request. A redirect URI is where the browser carries a
// code, so only targets that hand it to the client are allowed:
//
//   - https with a host;
//   - http on a loopback host (RFC 8252 §7.3; any port is matched);
//   - a private-use scheme of a native app (RFC 8252 §7.1) in reverse-DNS
//     form, "com.example.app:/cb": the form RFC 8252 asks for, which names
//     a domain its app's publisher controls and so never collides with a
//     scheme the operating system gives to something else;
//   - a single-label private-use scheme ("cursor://…") only when the
//     operator lists it (oauth.app_redirect_schemes, default
//     DefaultAppRedirectSchemes). IDEs that are MCP clients use such
//     schemes, but so do the operating system's own handlers: ms-msdt: and
//     search-ms: open Windows tools from a link, and a code sent there
//     reaches no client. Allowing only the listed ones keeps every other
//     handler of every other platform out, known or not;
//   - never a scheme of deniedScheme, which no listing allows.
//
// No redirect URI has a fragment, user information, or a character outside
// printable ASCII.

// DefaultAppRedirectSchemes are the single-label private-use schemes
// allowed unless the operator says otherwise: the IDEs
// docs/oauth.md#redirect-schemes names (Cursor registers
// cursor://anysphere.cursor-mcp/oauth/callback, VS Code vscode://…).
var DefaultAppRedirectSchemes = []string{"cursor", "vscode"}

// redirectRule checks redirect URIs; its zero value allows no single-label
// scheme.
type redirectRule struct {
	// appSchemes are the allowed single-label private-use schemes, lower
	// case.
	appSchemes []string
}

// newRedirectRule returns the rule with these single-label schemes; New
// has checked them with CheckAppRedirectScheme.
func newRedirectRule(appSchemes []string) redirectRule {
	r := redirectRule{}
	for _, s := range appSchemes {
		r.appSchemes = append(r.appSchemes, strings.ToLower(s))
	}
	return r
}

// check returns why raw is not an acceptable redirect URI, or nil.
func (r redirectRule) check(raw string) error {
	if len(raw) > maxRedirectURIBytes {
		return fmt.Errorf("a redirect URI is longer than %d bytes", maxRedirectURIBytes)
	}
	// A URI is printable ASCII (RFC 3986); anything else, raw, could make
	// the host the consent page shows read as another one.
	if strings.ContainsFunc(raw, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
		return fmt.Errorf("redirect URI %q has a character that is not printable ASCII (percent-encode it)", raw)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return fmt.Errorf("redirect URI %q is not an absolute URL", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("redirect URI %q has a fragment", raw)
	}
	if u.User != nil {
		return fmt.Errorf("redirect URI %q has user information", raw)
	}
	if u.Host != "" && !validHost(u.Hostname()) {
		return fmt.Errorf("redirect URI %q: the host is neither a DNS name nor an IP address", raw)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && u.Host != "":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("redirect URI %q: http is allowed only on loopback (127.0.0.1, [::1], localhost); use https", raw)
	case u.Scheme == "http" || u.Scheme == "https":
		return fmt.Errorf("redirect URI %q has no host", raw)
	}
	if err := r.privateUse(u.Scheme); err != nil {
		return fmt.Errorf("redirect URI %q: %w", raw, err)
	}
	if u.Host == "" && !strings.HasPrefix(u.Path, "/") {
		return fmt.Errorf("redirect URI %q: a private-use scheme needs a path (scheme:/path, RFC 8252 §7.1)", raw)
	}
	return nil
}

// privateUse checks a scheme other than http and https.
func (r redirectRule) privateUse(scheme string) error {
	switch {
	case deniedScheme(scheme):
		return fmt.Errorf("scheme %q is never a redirect target", scheme)
	case strings.Contains(scheme, "."):
		return reverseDNS(scheme)
	case slices.Contains(r.appSchemes, scheme):
		return nil
	}
	return fmt.Errorf("scheme %q is neither in reverse-DNS form (com.example.app, RFC 8252 §7.1) nor listed in oauth.app_redirect_schemes", scheme)
}

// reverseDNS checks that a dotted scheme reads as a reversed domain name:
// labels of lower-case letters, digits and inner hyphens, the first a
// top-level domain (letters only).
func reverseDNS(scheme string) error {
	labels := strings.Split(scheme, ".")
	bad := fmt.Errorf("scheme %q is not in reverse-DNS form (com.example.app, RFC 8252 §7.1)", scheme)
	for i, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return bad
		}
		for _, c := range l {
			letter := c >= 'a' && c <= 'z'
			if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '-')) {
				return bad
			}
		}
	}
	return nil
}

// deniedRedirectSchemes are schemes that a browser runs, reads locally or
// treats as something other than handing a URL to an app, and operating
// system handlers reachable from a link: a code sent to them would execute
// script, read files, start a program or leave the browser's control.
var deniedRedirectSchemes = []string{
	"javascript", "vbscript", "data", "file", "blob", "filesystem", "about",
	"view-source", "chrome", "chrome-extension", "chrome-untrusted", "devtools", "edge", "moz-extension",
	"safari-extension", "resource", "ws", "wss", "ftp", "mailto", "tel", "sms", "jar", "mhtml", "mk", "its",
	"hcp", "res", "shell", "search", "search-ms", "intent", "android-app", "itms-services", "smb", "ldap", "ldaps",
}

// deniedPrefixes are families of such schemes: Windows' ms-* protocol
// handlers (ms-msdt, ms-officecmd, ms-cxh, …) and the IANA vendor and
// IRIS trees (vnd.sun.star.script runs office macros), which look like
// reverse-DNS names but are not domains.
var deniedPrefixes = []string{"ms-", "vnd.", "iris."}

// deniedScheme reports whether a scheme may never be a redirect target.
func deniedScheme(scheme string) bool {
	return slices.Contains(deniedRedirectSchemes, scheme) ||
		slices.ContainsFunc(deniedPrefixes, func(p string) bool { return strings.HasPrefix(scheme, p) })
}

// errAppScheme is an oauth.app_redirect_schemes entry that cannot be one.
var errAppScheme = errors.New("not a single-label private-use scheme")

// CheckAppRedirectScheme reports whether s may be listed as a single-label
// private-use redirect scheme (oauth.app_redirect_schemes): a URI scheme
// without a dot (dotted ones are allowed by form), not http or https, and
// not one that is never a redirect target. The configuration refuses the
// others at start.
func CheckAppRedirectScheme(s string) error {
	s = strings.ToLower(s)
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z') || strings.ContainsFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-')
	}) {
		return fmt.Errorf("%w: %q (letters, digits, '+' and '-', starting with a letter, no dot)", errAppScheme, s)
	}
	if s == "http" || s == "https" || deniedScheme(s) {
		return fmt.Errorf("%w: %q is never a private-use redirect target", errAppScheme, s)
	}
	return nil
}

// isPrivateUse reports whether a checked redirect URI uses a private-use
// scheme rather than https or loopback http.
func isPrivateUse(u *url.URL) bool { return u.Scheme != "https" && u.Scheme != "http" }

// validHost reports whether a redirect URI's host (without port or
// brackets) is a DNS name — dot-separated labels of letters, digits and
// inner hyphens, at most 253 bytes — or an IP address without a zone. Go's
// URL parser takes much more as a host ("a;b", "a'b", "a,b"), and the
// host reaches the consent page's Content-Security-Policy and its text.
func validHost(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Zone() == ""
	}
	if host == "" || len(host) > 253 {
		return false
	}
	for _, l := range strings.Split(host, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
