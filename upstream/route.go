package upstream

import (
	"fmt"
	"strings"
)

// Route is one kind of request a client makes: its method and its path
// template, in the Tracing syntax (/a/{b}/c, {b}.diff, {b...}). A client
// builds each request's path from its route (Segments), so the path it
// sends, the template its spans name and the route an emulator is checked
// against are one string.
type Route struct {
	Method   string
	Template string
}

// Segments fills the route's parameters, in order, with values and returns
// the unescaped path segments for Client.NewRequest (which escapes each):
// a {b} or {b}.diff parameter is one segment, a {b...} parameter is its
// value split at "/". A count of values other than the template's
// parameters is a programming error and panics.
func (r Route) Segments(values ...string) []string {
	t := parseRouteTemplate(r.Template)
	var out []string
	params := 0
	for _, seg := range t.segments {
		if !seg.param {
			out = append(out, seg.literal)
			continue
		}
		if params >= len(values) {
			panic(fmt.Sprintf("upstream: route %s: %d values for more parameters", r.Template, len(values)))
		}
		v := values[params]
		params++
		if seg.rest {
			out = append(out, strings.Split(v, "/")...)
			continue
		}
		out = append(out, v+seg.suffix)
	}
	if params != len(values) {
		panic(fmt.Sprintf("upstream: route %s: %d values for %d parameters", r.Template, len(values), params))
	}
	return out
}

// Templates are the routes' templates, in order (Tracing.Routes).
func Templates(routes []Route) []string {
	out := make([]string, 0, len(routes))
	for _, r := range routes {
		out = append(out, r.Template)
	}
	return out
}

// Matches reports whether an escaped request path is one of the route's
// (the matching of Tracing).
func (r Route) Matches(escapedPath string) bool {
	return matchRoute([]routeTemplate{parseRouteTemplate(r.Template)}, escapedPath) == r.Template
}

// ExamplePath is a concrete path of the route, its parameters filled with
// sample values (a {b...} one with two segments): what a test asks an
// emulator for, to check that it serves the route.
func (r Route) ExamplePath() string {
	var values []string
	for i, seg := range parseRouteTemplate(r.Template).segments {
		switch {
		case seg.rest:
			values = append(values, fmt.Sprintf("v%d/w%d", i, i))
		case seg.param:
			values = append(values, fmt.Sprintf("%d", 100+i))
		}
	}
	return "/" + strings.Join(r.Segments(values...), "/")
}

// RouteShape is a route pattern without its parameter names, so a
// template and a router's pattern for the same route compare equal: {b}
// is {}, {b...} and a trailing * are {...}, a trailing slash is dropped.
func RouteShape(pattern string) string {
	parts := strings.Split(strings.Trim(pattern, "/"), "/")
	for i, p := range parts {
		switch {
		case p == "*" || strings.HasPrefix(p, "{") && strings.HasSuffix(p, "...}"):
			parts[i] = "{...}"
		case strings.HasPrefix(p, "{"):
			end := strings.IndexByte(p, '}')
			if end > 0 {
				parts[i] = "{}" + p[end+1:]
			}
		}
	}
	return "/" + strings.Join(parts, "/")
}
