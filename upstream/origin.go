// Package upstream is the only way the gateway talks to the outside world: a
// strict HTTP client bound to one fixed origin that refuses redirects, asks for
// identity encoding, bounds every read and times out stalled I/O.
//
// Callers never build URLs from text: they pass path segments, each escaped as
// one segment, so caller input cannot change the origin or the route.
package upstream

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ParseOrigin checks that raw is a bare origin (scheme://host[:port], no
// path, query, fragment or userinfo) and that it is https, or http on a
// loopback host (127.0.0.0/8, ::1, localhost) for local and test use.
func ParseOrigin(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("scheme must be https (or http on a loopback host), got %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("missing host")
	case u.User != nil:
		return nil, fmt.Errorf("userinfo is not allowed in an origin")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.Opaque != "":
		return nil, fmt.Errorf("an origin has no path, query or fragment")
	case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
		return nil, fmt.Errorf("plain http is only allowed for loopback hosts")
	case !HasValidPort(u):
		return nil, fmt.Errorf("the port must be from 1 to 65535")
	}
	return &url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host)}, nil
}

// IsPort reports whether p is a TCP port as an address or URL writes it:
// one to five decimal digits, 1 to 65535. Port 0 is a listener's "any
// free port", which no client can be configured to reach.
func IsPort(p string) bool {
	if len(p) == 0 || len(p) > 5 || strings.Trim(p, "0123456789") != "" {
		return false
	}
	n, _ := strconv.Atoi(p)
	return n >= 1 && n <= 65535
}

// HasValidPort reports whether u's authority names no port, or one IsPort
// accepts: a URL to port 0, to 99999, or with a bare colon ("host:") is a
// mistake that would otherwise surface only at the first request.
func HasValidPort(u *url.URL) bool {
	return !strings.HasSuffix(u.Host, ":") && (u.Port() == "" || IsPort(u.Port()))
}

// IsLoopbackHost reports whether host (without port) is localhost or a
// loopback IP address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether u targets exactly the origin o (scheme, host
// and port, with default ports made explicit).
func sameOrigin(o, u *url.URL) bool {
	return strings.EqualFold(o.Scheme, u.Scheme) && hostPort(o) == hostPort(u)
}

func hostPort(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[strings.ToLower(u.Scheme)]
	}
	return net.JoinHostPort(host, port)
}

// Path joins segments into an escaped URL path ("/a/b%2Fc"), escaping each
// segment on its own so that a "/" or "?" inside caller text stays inside its
// segment. Empty, "." and ".." segments are refused: a server would resolve
// them as dot-segments and so leave the route the caller was given.
func Path(segments ...string) (path, rawPath string, err error) {
	var p, rp strings.Builder
	for _, s := range segments {
		if s == "" || s == "." || s == ".." {
			return "", "", fmt.Errorf("path segment %q is not allowed", s)
		}
		p.WriteByte('/')
		p.WriteString(s)
		rp.WriteByte('/')
		rp.WriteString(url.PathEscape(s))
	}
	return p.String(), rp.String(), nil
}
