package server

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// field binds a setting to its Config field: set parses a value into it
// (a refused value leaves the field as it was) and show prints it for
// --config-test, "" for nothing set.
type field struct {
	set  func(c *Config, v string) error
	show func(c *Config) string
}

// textField is a string taken as given: a file path, a user or client
// name, or a secret (whose row is envOnly, so show never reaches output).
func textField(f func(*Config) *string) field {
	return field{
		set:  func(c *Config, v string) error { *f(c) = v; return nil },
		show: func(c *Config) string { return *f(c) },
	}
}

// parsedField is a value with a parser and a printer of its own, such as
// the collector policy's GOGC and GOMEMLIMIT syntax.
func parsedField[T any](f func(*Config) *T, parse func(string) (T, error), format func(T) string) field {
	return field{
		set: func(c *Config, v string) error {
			x, err := parse(v)
			if err != nil {
				return err
			}
			*f(c) = x
			return nil
		},
		show: func(c *Config) string { return format(*f(c)) },
	}
}

// boolField is true or false.
func boolField(f func(*Config) *bool) field {
	return field{
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false")
			}
			*f(c) = b
			return nil
		},
		show: func(c *Config) string { return strconv.FormatBool(*f(c)) },
	}
}

// durationField is a positive duration such as 30s.
func durationField(f func(*Config) *time.Duration) field {
	return field{
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("want a positive duration such as 30s")
			}
			*f(c) = d
			return nil
		},
		show: func(c *Config) string { return f(c).String() },
	}
}

// positiveField is a positive integer of either width.
func positiveField[T int | int64](f func(*Config) *T) field {
	return field{
		set:  positiveInt(f),
		show: func(c *Config) string { return strconv.FormatInt(int64(*f(c)), 10) },
	}
}

// positiveInt sets an int or int64 field from a positive decimal integer
// that fits it; one parser serves both widths.
func positiveInt[T int | int64](field func(*Config) *T) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || int64(T(n)) != n {
			return fmt.Errorf("want a positive integer")
		}
		*field(c) = T(n)
		return nil
	}
}

// originField is an upstream origin as upstream.ParseOrigin takes it
// (https, or http on loopback); empty for none.
func originField(f func(*Config) **url.URL) field {
	return field{
		set: func(c *Config, v string) error {
			if v == "" {
				*f(c) = nil
				return nil
			}
			u, err := upstream.ParseOrigin(v)
			if err != nil {
				return err
			}
			*f(c) = u
			return nil
		},
		show: func(c *Config) string { return urlString(*f(c)) },
	}
}

// urlString is u as text, "" for nil.
func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}

// joinShown prints a list setting as it is written: its items,
// comma-separated.
func joinShown[T any](items []T, show func(T) string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = show(it)
	}
	return strings.Join(out, ",")
}

// setListenAddress sets *dst to v, an address a listener opens and
// clients must reach: host:port, the port a decimal from 1 to 65535 (an
// empty host is every interface). Port 0 would be whatever port the kernel
// picks, which no client, proxy or derived public_url could name, and a
// service name such as "http" is a lookup of its own; both are refused.
func setListenAddress(dst *string, v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	if !upstream.IsPort(port) {
		return fmt.Errorf("want host:port with a port from 1 to 65535, not %q", port)
	}
	*dst = v
	return nil
}

// checkPublicURL checks public_url. It is sent to every anonymous caller
// (the OAuth metadata's issuer and endpoints, the resource metadata,
// WWW-Authenticate) and every endpoint URL is built by appending to it, so
// it may carry nothing but scheme, host, port and path: user information
// would publish a credential, and a query or fragment (even an empty "?"
// or "#") would end up in the middle of every URL built from it. The
// refusal does not repeat the value, which may hold a password.
func checkPublicURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("want an absolute http(s) URL such as https://gateway.example")
	case u.User != nil:
		return fmt.Errorf("must not contain user information (user:password@); it is published to every caller")
	case u.ForceQuery || u.RawQuery != "" || strings.Contains(v, "?"):
		return fmt.Errorf("must not contain a query (?…); endpoint URLs are built by appending to it")
	case u.Fragment != "" || strings.Contains(v, "#"):
		return fmt.Errorf("must not contain a fragment (#…); endpoint URLs are built by appending to it")
	case !upstream.HasValidPort(u):
		return fmt.Errorf("the port must be from 1 to 65535")
	}
	return nil
}

// parseBrowserOrigin returns s as the Origin a browser sends
// (scheme://host[:port], scheme and host lower-case) when s is one: http or
// https, a host, a numeric port if any, nothing else (no user info, path
// beyond "/", query or fragment). Other schemes never reach the MCP
// endpoints from a page the gateway should trust.
func parseBrowserOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.User != nil ||
		u.Host == "" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", false
	}
	if !upstream.HasValidPort(u) {
		return "", false
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), true
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
