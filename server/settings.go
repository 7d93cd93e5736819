package server

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// setting is one configuration key: its YAML key, environment variable,
// optional flag, and parser. This table is the single list of keys; the
// example file, the docs test and the loaders all read it.
type setting struct {
	key     string // dotted YAML key
	flag    string // command-line flag name, "" for none
	envOnly bool   // a secret: environment (or file) only, never YAML or flags
	help    string
	set     func(c *Config, v string) error
}

// Env is the environment variable of a setting.
func (s setting) Env() string {
	if s.key == "github.app_id" {
		return "HEYAIRA_GITHUB_APP_ID" // name kept from seed 002
	}
	if s.key == "github.private_key_file" {
		return "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE" // name kept from seed 002
	}
	return "AGENT_GATEWAY_" + strings.ToUpper(strings.NewReplacer(".", "_").Replace(s.key))
}

var settings = []setting{
	{key: "listen", flag: "listen", help: "address the API listens on", set: func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port: %w", err)
		}
		c.Listen = v
		return nil
	}},
	{key: "public_url", flag: "public-url", help: "URL clients use to reach the gateway (default http://<listen>); no user information, query or fragment", set: func(c *Config, v string) error {
		if err := checkPublicURL(v); err != nil {
			return err
		}
		c.PublicURL, c.publicURLExplicit = strings.TrimRight(v, "/"), true
		return nil
	}},
	{key: "data_dir", flag: "data-dir", help: "directory for the SQLite database and generated secrets", set: func(c *Config, v string) error {
		if v == "" {
			return fmt.Errorf("must not be empty")
		}
		c.DataDir = v
		return nil
	}},
	{key: "database.url", help: "postgres://… for PostgreSQL; empty for SQLite in data_dir", set: func(c *Config, v string) error {
		if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") && !strings.HasPrefix(v, "sqlite://") && !strings.HasPrefix(v, "file:") {
			return fmt.Errorf("want a postgres://, postgresql://, sqlite:// or file: URL")
		}
		c.DatabaseURL = v
		return nil
	}},
	{key: "log.level", help: "debug, info, warn or error", set: func(c *Config, v string) error {
		switch v {
		case "debug", "info", "warn", "error":
			c.LogLevel = v
			return nil
		}
		return fmt.Errorf("want debug, info, warn or error")
	}},
	{key: "shutdown_grace", help: "how long shutdown waits for in-flight requests", set: durationSetter(func(c *Config) *time.Duration { return &c.ShutdownGrace })},
	{key: "runtime.gc_percent", help: "the collector's GOGC percentage, or off; the environment's GOGC wins when set", set: func(c *Config, v string) error {
		n, err := parseGCPercent(v)
		c.GCPercent = n
		return err
	}},
	{key: "runtime.memory_limit", help: "the runtime's soft memory limit (GOMEMLIMIT syntax: 24MiB, or off); the environment's GOMEMLIMIT wins when set", set: func(c *Config, v string) error {
		n, err := parseMemoryLimit(v)
		c.MemoryLimit = n
		return err
	}},
	{key: "http.read_header_timeout", help: "longest time a client may take to send a request's headers (slowloris defence)", set: durationSetter(func(c *Config) *time.Duration { return &c.ReadHeaderTimeout })},
	{key: "http.max_connections", help: "open connections at once; past it an idle one is closed, else the new one is refused with 503", set: positiveInt(func(c *Config) *int { return &c.MaxConnections })},
	{key: "http.max_connections_per_ip", help: "open connections at once from one client address (the TCP peer; trusted proxies are exempt)", set: positiveInt(func(c *Config) *int { return &c.MaxConnectionsPerIP })},
	{key: "http.max_in_flight", help: "requests being served at once; past it 503 with Retry-After", set: positiveInt(func(c *Config) *int { return &c.MaxInFlight })},
	{key: "http.max_in_flight_per_ip", help: "requests being served at once for one client IP; past it 429 with Retry-After", set: positiveInt(func(c *Config) *int { return &c.MaxInFlightPerIP })},
	{key: "http.body_budget_bytes", help: "request-body bytes buffered at once by all requests; past it 503 with Retry-After", set: positiveInt(func(c *Config) *int64 { return &c.BodyBudgetBytes })},
	{key: "http.body_budget_per_ip_bytes", help: "request-body bytes buffered at once for one client IP; past it 429 with Retry-After", set: positiveInt(func(c *Config) *int64 { return &c.BodyBudgetPerIPBytes })},
	{key: "http.client_ipv6_prefix", help: fmt.Sprintf("leading bits of an IPv6 client address that every per-address bound and per-IP budget counts it by (IPv4 counts exactly), %d to 128", middleware.MinIPv6Prefix), set: func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < middleware.MinIPv6Prefix || n > 128 {
			return fmt.Errorf("want a prefix length from %d to 128 (one host usually holds a /64)", middleware.MinIPv6Prefix)
		}
		c.ClientIPv6Prefix = n
		return nil
	}},
	{key: "http.write_timeout", help: "longest time one write to a client may block; per write, not a deadline on the whole response (a diff page takes as long as its upstream makes progress)", set: durationSetter(func(c *Config) *time.Duration { return &c.WriteTimeout })},
	{key: "forgejo.origin", flag: "forgejo-origin", help: "Forgejo origin, https:// (http:// only on loopback)", set: originSetter(func(c *Config) **url.URL { return &c.ForgejoOrigin })},
	{key: "forgejo.io_timeout", help: "per-request I/O timeout towards Forgejo (each wait for progress)", set: durationSetter(func(c *Config) *time.Duration { return &c.ForgejoIOTimeout })},
	{key: "forgejo.token", envOnly: true, help: "stdio only: the process's own Forgejo token", set: func(c *Config, v string) error { c.ForgejoToken = v; return nil }},
	{key: "forgejo.token_file", help: "stdio only: file holding the process's own Forgejo token", set: func(c *Config, v string) error { c.ForgejoTokenFile = v; return nil }},
	{key: "forgejo.username", help: "stdio only: Basic-auth user for the process's own credential", set: func(c *Config, v string) error { c.ForgejoUsername = v; return nil }},
	{key: "forgejo.password", envOnly: true, help: "stdio only: Basic-auth password", set: func(c *Config, v string) error { c.ForgejoPassword = v; return nil }},
	{key: "forgejo.password_file", help: "stdio only: file holding the Basic-auth password", set: func(c *Config, v string) error { c.ForgejoPassFile = v; return nil }},
	{key: "github.api_origin", help: "GitHub API origin", set: originSetter(func(c *Config) **url.URL { return &c.GitHubAPIOrigin })},
	{key: "github.io_timeout", help: "per-request I/O timeout towards GitHub", set: durationSetter(func(c *Config) *time.Duration { return &c.GitHubIOTimeout })},
	{key: "github.app_id", help: "GitHub App ID (env HEYAIRA_GITHUB_APP_ID); 0 for none", set: func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("want a positive integer (0 for none)")
		}
		c.GitHubAppID = n
		return nil
	}},
	{key: "github.private_key_file", help: "PEM file of the GitHub App private key, mode 0600 or 0400 and owned by the gateway's user (env HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE)", set: func(c *Config, v string) error { c.GitHubAppKeyFile = v; return nil }},
	{key: "metrics.listen", flag: "metrics-listen", help: "separate host:port for /metrics (default: the API listener)", set: func(c *Config, v string) error {
		if v != "" {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("want host:port: %w", err)
			}
		}
		c.MetricsListen = v
		return nil
	}},
	{key: "tracing.otlp_endpoint", help: "OTLP/HTTP base URL of the trace collector, as OTEL_EXPORTER_OTLP_ENDPOINT (the gateway appends /v1/traces; https, or http on loopback); empty turns tracing off", set: func(c *Config, v string) error {
		if v == "" {
			c.TracingEndpoint = nil
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("want an http(s) base URL without query or fragment")
		}
		origin, err := upstream.ParseOrigin(u.Scheme + "://" + u.Host)
		if err != nil || u.User != nil {
			return fmt.Errorf("want an http(s) base URL: https, or http on a loopback host, no userinfo")
		}
		c.TracingEndpoint = &url.URL{Scheme: origin.Scheme, Host: origin.Host, Path: strings.TrimRight(u.Path, "/")}
		return nil
	}},
	{key: "tracing.sample_ratio", help: "share of new traces sampled, 0 to 1 (a trusted proxy's traceparent decides for its own traces)", set: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return fmt.Errorf("want a number from 0 to 1")
		}
		c.TracingSampleRatio = f
		return nil
	}},
	{key: "ratelimit.redis_url", help: "redis://… to share rate budgets between replicas; empty for in-memory", set: func(c *Config, v string) error {
		if v != "" && !strings.HasPrefix(v, "redis://") && !strings.HasPrefix(v, "rediss://") {
			return fmt.Errorf("want redis:// or rediss://")
		}
		c.RedisURL = v
		return nil
	}},
	{key: "ratelimit.read_per_minute", help: "read budget per caller per minute", set: positiveInt(func(c *Config) *int { return &c.ReadPerMinute })},
	{key: "ratelimit.write_per_minute", help: "write budget per caller per minute", set: positiveInt(func(c *Config) *int { return &c.WritePerMinute })},
	{key: "ratelimit.ip_ceiling_per_minute", help: "per client IP, the tool calls per minute made with unverified Forgejo bearers, whichever bearer each carries", set: positiveInt(func(c *Config) *int { return &c.IPCeilingPerMinute })},
	{key: "ratelimit.refused_bearers_per_minute", help: "per client IP, the bearers /mcp/documents may refuse per minute; past it, that address's bearers are answered 429 without a store lookup", set: positiveInt(func(c *Config) *int { return &c.RefusedBearersPerMinute })},
	{key: "cursor.secret_file", help: "file holding the cursor signing secret (default: generated into data_dir)", set: func(c *Config, v string) error { c.CursorSecretFile = v; return nil }},
	{key: "cursor.ttl", help: "how long a document cursor stays valid", set: durationSetter(func(c *Config) *time.Duration { return &c.CursorTTL })},
	{key: "tls.cert_file", help: "TLS certificate (PEM); with tls.key_file the gateway serves HTTPS itself", set: func(c *Config, v string) error { c.TLSCertFile = v; return nil }},
	{key: "tls.key_file", help: "TLS private key (PEM)", set: func(c *Config, v string) error { c.TLSKeyFile = v; return nil }},
	{key: "trusted_proxies", help: "comma-separated IPs/CIDRs whose X-Forwarded-For/-Proto are believed", set: func(c *Config, v string) error {
		c.TrustedProxies = nil
		for _, part := range splitList(v) {
			p, err := netip.ParsePrefix(part)
			if err != nil {
				a, aerr := netip.ParseAddr(part)
				if aerr != nil {
					return fmt.Errorf("%q is not an IP or CIDR", part)
				}
				p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
			}
			if p.Bits() == 0 {
				// Fail closed: with it any caller sets its own client
				// address, and with it its budgets and shares.
				return fmt.Errorf("%q trusts every address, so any caller could forge X-Forwarded-For and pick its own client address and budgets; list only your proxies' addresses", part)
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
		return nil
	}},
	{key: "oidc.issuer", help: "OpenID Connect issuer users log in at for OAuth on /mcp/documents (https; http only on loopback)", set: func(c *Config, v string) error {
		if v != "" {
			if err := parseIssuer(v); err != nil {
				return err
			}
		}
		c.OIDCIssuer = v
		return nil
	}},
	{key: "oidc.client_id", help: "the gateway's client ID at the identity provider", set: func(c *Config, v string) error { c.OIDCClientID = v; return nil }},
	{key: "oidc.client_secret", envOnly: true, help: "the gateway's client secret at the identity provider", set: func(c *Config, v string) error { c.OIDCClientSecret = v; return nil }},
	{key: "oidc.client_secret_file", help: "file holding the gateway's client secret at the identity provider", set: func(c *Config, v string) error { c.OIDCClientSecretFile = v; return nil }},
	{key: "oidc.scopes", help: "scopes requested at the identity provider (must include openid)", set: func(c *Config, v string) error {
		c.OIDCScopes = strings.Fields(strings.ReplaceAll(v, ",", " "))
		if len(c.OIDCScopes) == 0 {
			c.OIDCScopes = defaultOIDCScopes
		}
		return nil
	}},
	{key: "oauth.authorize_per_minute", help: "OAuth authorization requests (each may store a login session) per client address per minute, shared through Redis when configured", set: positiveInt(func(c *Config) *int { return &c.OAuthAuthorizePerMinute })},
	{key: "oauth.register_per_minute", help: "OAuth client registrations per client address per minute, shared through Redis when configured", set: positiveInt(func(c *Config) *int { return &c.OAuthRegisterPerMinute })},
	{key: "oauth.login_ttl", help: "how long a browser's OAuth login session lives (authorize → consent) before it is refused and purged", set: durationSetter(func(c *Config) *time.Duration { return &c.OAuthLoginTTL })},
	{key: "oauth.unused_client_ttl", help: "how long a registered OAuth client that never obtained a token is kept before the purge deletes it", set: durationSetter(func(c *Config) *time.Duration { return &c.OAuthUnusedClientTTL })},
	{key: "oauth.revoked_grant_retention", help: "how long a revoked OAuth grant stays listed (admin list-grants --include-revoked) once none of its tokens is left", set: durationSetter(func(c *Config) *time.Duration { return &c.OAuthRevokedGrantRetention })},
	{key: "oauth.purge_interval", help: "how often each replica purges expired OAuth codes, login sessions, tokens, unused clients and old revoked grants (one replica at a time)", set: durationSetter(func(c *Config) *time.Duration { return &c.OAuthPurgeInterval })},
	{key: "catalog.workflow_retention", help: "how long a dispatched workflow is kept, and replayable with workflow_get, before the purge deletes it (after that: not_found)", set: durationSetter(func(c *Config) *time.Duration { return &c.WorkflowRetention })},
	{key: "catalog.workflow_purge_interval", help: "how often each replica deletes the workflows older than catalog.workflow_retention, in batches (one replica at a time)", set: durationSetter(func(c *Config) *time.Duration { return &c.WorkflowPurgeInterval })},
	{key: "catalog.dispatches_per_hour", help: "workflow_dispatch calls per principal per hour, shared through Redis when configured; past it 429 rate_limited (budget dispatch) before anything is read or stored", set: positiveInt(func(c *Config) *int { return &c.DispatchesPerHour })},
	{key: "oauth.client_metadata_hosts", help: "comma-separated hosts whose https URLs clients may use as client_id (Client ID Metadata Documents, fetched by the gateway); empty: off", set: func(c *Config, v string) error {
		c.OAuthClientMetadataHosts = nil
		for _, h := range splitList(v) {
			if strings.ContainsAny(h, "/:@*") || strings.TrimSpace(h) != h {
				return fmt.Errorf("%q is not a host name (no scheme, port, path or wildcard)", h)
			}
			c.OAuthClientMetadataHosts = append(c.OAuthClientMetadataHosts, strings.ToLower(h))
		}
		return nil
	}},
	{key: "oauth.client_metadata_allow_loopback", help: "let client metadata documents live on loopback addresses (tests and local development only)", set: func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		c.OAuthClientMetadataAllowLoopback = b
		return nil
	}},
	{key: "oauth.client_metadata_fetches_per_minute", help: "client metadata documents one client address may make the gateway fetch per minute (cached documents and failures cost none); past it 429 with Retry-After; shared through Redis when configured", set: positiveInt(func(c *Config) *int { return &c.OAuthClientMetadataFetchesPerMinute })},
	{key: "oauth.client_metadata_total_fetches_per_minute", help: "client metadata documents all client addresses together may make the gateway fetch per minute; shared through Redis when configured", set: positiveInt(func(c *Config) *int { return &c.OAuthClientMetadataTotalFetchesPerMinute })},
	{key: "oauth.client_metadata_ports", help: "comma-separated ports besides 443 that client_id URLs of client metadata documents may name (any other is refused before its host is resolved); empty: 443 only", set: func(c *Config, v string) error {
		c.OAuthClientMetadataPorts = nil
		for _, p := range splitList(v) {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("%q is not a port (1-65535)", p)
			}
			c.OAuthClientMetadataPorts = append(c.OAuthClientMetadataPorts, n)
		}
		return nil
	}},
	{key: "oauth.app_redirect_schemes", help: "comma-separated single-label private-use schemes (cursor, vscode) clients may register redirect URIs with; reverse-DNS schemes (com.example.app) are always allowed, ms-msdt, search-ms, javascript and the like never", set: func(c *Config, v string) error {
		var schemes, bad []string
		for _, s := range splitList(v) {
			if err := oauth.CheckAppRedirectScheme(s); err != nil {
				bad = append(bad, err.Error())
				continue
			}
			schemes = append(schemes, strings.ToLower(s))
		}
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "; "))
		}
		c.OAuthAppRedirectSchemes = schemes
		return nil
	}},
	{key: "allowed_origins", help: "comma-separated extra browser origins allowed on the MCP endpoints, each http(s)://host[:port]", set: func(c *Config, v string) error {
		var origins, bad []string
		for _, part := range splitList(v) {
			o, ok := parseBrowserOrigin(part)
			if !ok {
				bad = append(bad, strconv.Quote(part))
				continue
			}
			origins = append(origins, o)
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s: want http(s)://host[:port], what a browser sends as Origin", strings.Join(bad, ", "))
		}
		c.AllowedOrigins = origins
		return nil
	}},
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
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", false
		}
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

func durationSetter(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 30s")
		}
		*field(c) = d
		return nil
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

func originSetter(field func(*Config) **url.URL) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v == "" {
			*field(c) = nil
			return nil
		}
		u, err := upstream.ParseOrigin(v)
		if err != nil {
			return err
		}
		*field(c) = u
		return nil
	}
}
