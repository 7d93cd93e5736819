package server

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// setting is one configuration key, and the one place the key is spelled
// out: Default, the YAML, environment and flag loaders, --config-test and
// the tests of the example file and the docs all read the settings table.
// A row holds
//
//   - key: the dotted YAML key, which every problem report names;
//   - flag: the command-line flag, "" for none;
//   - aliases: environment variables read besides Env (AGENT_GATEWAY_ and
//     the key upper-cased, dots as underscores), such as the GitHub
//     App's HEYAIRA_* names; two of them set to different values are refused;
//   - envOnly: a secret, accepted from the environment only, never from
//     YAML or a flag (a *_file key beside it reads it from a file);
//   - hide: --config-test prints only (set) or (unset), as it does for
//     every envOnly row: a URL that may carry a password;
//   - help: one line for the flag's --help;
//   - def: the default, written as the parser reads it (as in the YAML
//     file); "" keeps the field's zero value. Default is these values
//     parsed, so no default is written anywhere else;
//   - field: set parses a value into the Config field, refusing it with
//     the field left as it was, and show prints the field for
//     --config-test ("" prints as (none)). textField, durationField,
//     positiveField, originField and parsedField build both for the
//     common kinds.
//
// A new key is one row here, its Config field, a line in
// configs/agent-gateway.example.yaml (TestExampleConfig holds it to def)
// and its operator docs.
type setting struct {
	key     string
	flag    string
	aliases []string
	envOnly bool
	hide    bool
	help    string
	def     string
	field
}

// Env is the environment variable of a setting that follows its key; every
// key has one.
func (s setting) Env() string {
	return envPrefix + strings.ToUpper(strings.NewReplacer(".", "_").Replace(s.key))
}

// envNames are every environment variable the setting is read from, Env
// first.
func (s setting) envNames() []string {
	return append([]string{s.Env()}, s.aliases...)
}

// printed is the setting as --config-test shows it: a secret, or a value
// that may carry one, only as whether it is set.
func (s setting) printed(c *Config) string {
	v := s.show(c)
	switch {
	case (s.envOnly || s.hide) && v == "":
		return "(unset)"
	case s.envOnly || s.hide:
		return "(set)"
	case v == "":
		return "(none)"
	}
	return v
}

// settings is the table of configuration keys, in the order --config-test
// prints them.
var settings = []setting{
	{key: "listen", flag: "listen", def: "127.0.0.1:8080", help: "address the API listens on", field: field{
		set:  func(c *Config, v string) error { return setListenAddress(&c.Listen, v) },
		show: func(c *Config) string { return c.Listen },
	}},
	{key: "public_url", flag: "public-url", help: "URL clients use to reach the gateway (default http://<listen>); no user information, query or fragment", field: field{
		set: func(c *Config, v string) error {
			if err := checkPublicURL(v); err != nil {
				return err
			}
			c.PublicURL, c.publicURLExplicit = strings.TrimRight(v, "/"), true
			return nil
		},
		show: func(c *Config) string { return c.PublicURL },
	}},
	{key: "data_dir", flag: "data-dir", def: "./data", help: "directory for the SQLite database and generated secrets", field: field{
		set: func(c *Config, v string) error {
			if v == "" {
				return fmt.Errorf("must not be empty")
			}
			c.DataDir = v
			return nil
		},
		show: func(c *Config) string { return c.DataDir },
	}},
	{key: "database.url", hide: true, help: "postgres://… for PostgreSQL; empty for SQLite in data_dir", field: field{
		set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") && !strings.HasPrefix(v, "sqlite://") && !strings.HasPrefix(v, "file:") {
				return fmt.Errorf("want a postgres://, postgresql://, sqlite:// or file: URL")
			}
			c.DatabaseURL = v
			return nil
		},
		show: func(c *Config) string { return c.DatabaseURL },
	}},
	{key: "log.level", def: "info", help: "debug, info, warn or error", field: field{
		set: func(c *Config, v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.LogLevel = v
				return nil
			}
			return fmt.Errorf("want debug, info, warn or error")
		},
		show: func(c *Config) string { return c.LogLevel },
	}},
	{key: "shutdown_drain", def: "0s", help: "after SIGTERM, how long /readyz answers 503 while the listener still serves, so load balancers stop sending before it closes", field: field{
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > 5*time.Minute {
				return fmt.Errorf("want a duration from 0s to 5m such as 15s")
			}
			c.ShutdownDrain = d
			return nil
		},
		show: func(c *Config) string { return c.ShutdownDrain.String() },
	}},
	{key: "shutdown_grace", def: "30s", help: "how long shutdown waits for in-flight requests", field: durationField(func(c *Config) *time.Duration { return &c.ShutdownGrace })},
	{key: "http.write_timeout", def: "5m", help: "longest time one write to a client may block; per write, not a deadline on the whole response (a diff page takes as long as its upstream makes progress)", field: durationField(func(c *Config) *time.Duration { return &c.WriteTimeout })},
	{key: "http.read_header_timeout", def: "10s", help: "longest time a client may take to send a request's headers (slowloris defence)", field: durationField(func(c *Config) *time.Duration { return &c.ReadHeaderTimeout })},
	{key: "runtime.gc_percent", def: strconv.Itoa(defaultGCPercent), help: "the collector's GOGC percentage, or off; the environment's GOGC wins when set", field: parsedField(func(c *Config) *int { return &c.GCPercent }, parseGCPercent, formatGCPercent)},
	{key: "runtime.memory_limit", def: formatMemoryLimit(defaultMemoryLimit), help: "the runtime's soft memory limit (GOMEMLIMIT syntax: 24MiB, or off); the environment's GOMEMLIMIT wins when set", field: parsedField(func(c *Config) *int64 { return &c.MemoryLimit }, parseMemoryLimit, formatMemoryLimit)},
	{key: "http.max_connections", def: "1024", help: "open connections at once; past it an idle one is closed, else the new one is refused with 503", field: positiveField(func(c *Config) *int { return &c.MaxConnections })},
	{key: "http.max_connections_per_ip", def: "128", help: "open connections at once from one client address (the TCP peer; trusted proxies are exempt)", field: positiveField(func(c *Config) *int { return &c.MaxConnectionsPerIP })},
	{key: "http.max_in_flight", def: "512", help: "requests being served at once; past it 503 with Retry-After", field: positiveField(func(c *Config) *int { return &c.MaxInFlight })},
	{key: "http.max_in_flight_per_ip", def: "64", help: "requests being served at once for one client IP; past it 429 with Retry-After", field: positiveField(func(c *Config) *int { return &c.MaxInFlightPerIP })},
	{key: "http.body_budget_bytes", def: "33554432", help: "request-body bytes buffered at once by all requests (32 MiB); past it 503 with Retry-After", field: positiveField(func(c *Config) *int64 { return &c.BodyBudgetBytes })},
	{key: "http.body_budget_per_ip_bytes", def: "8388608", help: "request-body bytes buffered at once for one client IP (8 MiB); past it 429 with Retry-After", field: positiveField(func(c *Config) *int64 { return &c.BodyBudgetPerIPBytes })},
	{key: "http.client_ipv6_prefix", def: strconv.Itoa(middleware.DefaultIPv6Prefix), help: fmt.Sprintf("leading bits of an IPv6 client address that every per-address bound and per-IP budget counts it by (IPv4 counts exactly), %d to 128", middleware.MinIPv6Prefix), field: field{
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < middleware.MinIPv6Prefix || n > 128 {
				return fmt.Errorf("want a prefix length from %d to 128 (one host usually holds a /64)", middleware.MinIPv6Prefix)
			}
			c.ClientIPv6Prefix = n
			return nil
		},
		show: func(c *Config) string { return strconv.Itoa(c.ClientIPv6Prefix) },
	}},
	{key: "forgejo.origin", flag: "forgejo-origin", help: "Forgejo origin, https:// (http:// only on loopback)", field: originField(func(c *Config) **url.URL { return &c.ForgejoOrigin })},
	{key: "forgejo.io_timeout", def: "30s", help: "per-request I/O timeout towards Forgejo (each wait for progress)", field: durationField(func(c *Config) *time.Duration { return &c.ForgejoIOTimeout })},
	{key: "forgejo.token", envOnly: true, help: "stdio only: the process's own Forgejo token", field: textField(func(c *Config) *string { return &c.ForgejoToken })},
	{key: "forgejo.token_file", help: "stdio only: file holding the process's own Forgejo token", field: textField(func(c *Config) *string { return &c.ForgejoTokenFile })},
	{key: "forgejo.username", help: "stdio only: Basic-auth user for the process's own credential", field: textField(func(c *Config) *string { return &c.ForgejoUsername })},
	{key: "forgejo.password", envOnly: true, help: "stdio only: Basic-auth password", field: textField(func(c *Config) *string { return &c.ForgejoPassword })},
	{key: "forgejo.password_file", help: "stdio only: file holding the Basic-auth password", field: textField(func(c *Config) *string { return &c.ForgejoPassFile })},
	{key: "github.api_origin", def: "https://api.github.com", help: "GitHub API origin", field: originField(func(c *Config) **url.URL { return &c.GitHubAPIOrigin })},
	{key: "github.io_timeout", def: "30s", help: "per-request I/O timeout towards GitHub", field: durationField(func(c *Config) *time.Duration { return &c.GitHubIOTimeout })},
	{key: "github.call_timeout", def: "60s", help: "total deadline of one GitHub call (token, read and its one retry); files are at most 1 MiB, so a longer answer is a trickle", field: durationField(func(c *Config) *time.Duration { return &c.GitHubCallTimeout })},
	// The GitHub App's HEYAIRA_* names
	// (docs/architecture.md#github-app-and-installation-tokens) stay beside
	// the ones of the keys.
	{key: "github.app_id", aliases: []string{"HEYAIRA_GITHUB_APP_ID"}, help: "GitHub App ID; 0 for none", field: field{
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("want a positive integer (0 for none)")
			}
			c.GitHubAppID = n
			return nil
		},
		show: func(c *Config) string { return strconv.FormatInt(c.GitHubAppID, 10) },
	}},
	{key: "github.private_key_file", aliases: []string{"HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE"}, help: "PEM file of the GitHub App private key, mode 0600 or 0400 and owned by the gateway's user", field: textField(func(c *Config) *string { return &c.GitHubAppKeyFile })},
	{key: "metrics.listen", flag: "metrics-listen", help: "separate host:port for /metrics (default: the API listener)", field: field{
		set: func(c *Config, v string) error {
			if v == "" {
				c.MetricsListen = ""
				return nil
			}
			return setListenAddress(&c.MetricsListen, v)
		},
		show: func(c *Config) string { return c.MetricsListen },
	}},
	{key: "tracing.otlp_endpoint", help: "OTLP/HTTP base URL of the trace collector, as OTEL_EXPORTER_OTLP_ENDPOINT (the gateway appends /v1/traces; https, or http on loopback); empty turns tracing off", field: field{
		set: func(c *Config, v string) error {
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
		},
		show: func(c *Config) string { return urlString(c.TracingEndpoint) },
	}},
	{key: "tracing.sample_ratio", def: "1", help: "share of new traces sampled, 0 to 1 (a trusted proxy's traceparent decides for its own traces)", field: field{
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				return fmt.Errorf("want a number from 0 to 1")
			}
			c.TracingSampleRatio = f
			return nil
		},
		show: func(c *Config) string { return strconv.FormatFloat(c.TracingSampleRatio, 'g', -1, 64) },
	}},
	{key: "ratelimit.redis_url", hide: true, help: "redis://… to share rate budgets between replicas; empty for in-memory", field: field{
		set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "redis://") && !strings.HasPrefix(v, "rediss://") {
				return fmt.Errorf("want redis:// or rediss://")
			}
			c.RedisURL = v
			return nil
		},
		show: func(c *Config) string { return c.RedisURL },
	}},
	{key: "ratelimit.key_prefix", help: "start of every budget key in Redis, shared by the replicas of one deployment and by no other (default agw:<hash of public_url>:)", field: field{
		set: func(c *Config, v string) error {
			if strings.ContainsAny(v, " \t\r\n") || len(v) > 64 {
				return fmt.Errorf("want at most 64 characters without spaces")
			}
			c.RedisKeyPrefix = v
			return nil
		},
		show: func(c *Config) string { return c.RedisKeyPrefix },
	}},
	{key: "ratelimit.read_per_minute", def: "600", help: "read budget per caller per minute", field: positiveField(func(c *Config) *int { return &c.ReadPerMinute })},
	{key: "ratelimit.verified_bytes_per_minute", def: "0", help: "opt-in budget of diff bytes verified per caller per minute (every page pulls and verifies the whole diff); 0 is off, as the diff contract sets no total cap", field: parsedField(func(c *Config) *int64 { return &c.VerifiedBytesPerMinute }, parseNonNegative, formatInt64)},
	{key: "ratelimit.write_per_minute", def: "60", help: "write budget per caller per minute", field: positiveField(func(c *Config) *int { return &c.WritePerMinute })},
	{key: "ratelimit.ip_ceiling_per_minute", def: "600", help: "per client IP, the tool calls per minute made with unverified Forgejo bearers, whichever bearer each carries", field: positiveField(func(c *Config) *int { return &c.IPCeilingPerMinute })},
	{key: "ratelimit.refused_bearers_per_minute", def: "120", help: "per client IP, the bearers /mcp/documents may refuse per minute; past it, that address's bearers are answered 429 without a store lookup", field: positiveField(func(c *Config) *int { return &c.RefusedBearersPerMinute })},
	{key: "cursor.secret_file", help: "file holding the cursor signing secret (default: generated into data_dir)", field: textField(func(c *Config) *string { return &c.CursorSecretFile })},
	{key: "cursor.ttl", def: "15m", help: "how long a document cursor stays valid", field: durationField(func(c *Config) *time.Duration { return &c.CursorTTL })},
	{key: "tls.cert_file", help: "TLS certificate (PEM); with tls.key_file the gateway serves HTTPS itself", field: textField(func(c *Config) *string { return &c.TLSCertFile })},
	{key: "tls.key_file", help: "TLS private key (PEM)", field: textField(func(c *Config) *string { return &c.TLSKeyFile })},
	{key: "trusted_proxies", help: "comma-separated IPs/CIDRs whose X-Forwarded-For is believed", field: field{
		set: func(c *Config, v string) error {
			var proxies []netip.Prefix
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
				proxies = append(proxies, p.Masked())
			}
			c.TrustedProxies = proxies
			return nil
		},
		show: func(c *Config) string { return joinShown(c.TrustedProxies, netip.Prefix.String) },
	}},
	{key: "trust_all_forwarded", def: "false", help: "believe X-Forwarded-For from trusted_proxies however wide they are together (past a /8 or a /32 the gateway refuses to start without it, and warns at every start with it)", field: boolField(func(c *Config) *bool { return &c.TrustAllForwarded })},
	{key: "mcp.owned_tool_calls", def: "true", help: "serve stateless tools/call on the gateway's own path, byte-identical to the MCP SDK's and at a fraction of its CPU (docs/architecture.md); false sends every MCP request through the SDK's handler", field: boolField(func(c *Config) *bool { return &c.OwnedToolCalls })},
	{key: "allowed_origins", help: "comma-separated extra browser origins allowed on the MCP endpoints, each http(s)://host[:port]", field: field{
		set: func(c *Config, v string) error {
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
		},
		show: func(c *Config) string { return strings.Join(c.AllowedOrigins, ",") },
	}},
	{key: "oidc.issuer", help: "OpenID Connect issuer users log in at for OAuth on /mcp/documents (https; http only on loopback)", field: field{
		set: func(c *Config, v string) error {
			if v != "" {
				if err := parseIssuer(v); err != nil {
					return err
				}
			}
			c.OIDCIssuer = v
			return nil
		},
		show: func(c *Config) string { return c.OIDCIssuer },
	}},
	{key: "oidc.client_id", help: "the gateway's client ID at the identity provider", field: textField(func(c *Config) *string { return &c.OIDCClientID })},
	{key: "oidc.client_secret", envOnly: true, help: "the gateway's client secret at the identity provider", field: textField(func(c *Config) *string { return &c.OIDCClientSecret })},
	{key: "oidc.client_secret_file", help: "file holding the gateway's client secret at the identity provider", field: textField(func(c *Config) *string { return &c.OIDCClientSecretFile })},
	{key: "oidc.scopes", def: strings.Join(defaultOIDCScopes, " "), help: "scopes requested at the identity provider (must include openid); empty for the default", field: field{
		set: func(c *Config, v string) error {
			c.OIDCScopes = strings.Fields(strings.ReplaceAll(v, ",", " "))
			if len(c.OIDCScopes) == 0 {
				c.OIDCScopes = slices.Clone(defaultOIDCScopes)
			}
			return nil
		},
		show: func(c *Config) string { return strings.Join(c.OIDCScopes, " ") },
	}},
	{key: "oauth.authorize_per_minute", def: strconv.Itoa(oauth.DefaultAuthorizationsPerMinute), help: "OAuth authorization requests (each may store a login session) per client address per minute, shared through Redis when configured", field: positiveField(func(c *Config) *int { return &c.OAuthAuthorizePerMinute })},
	{key: "oauth.register_per_minute", def: strconv.Itoa(oauth.DefaultRegistrationsPerMinute), help: "OAuth client registrations per client address per minute, shared through Redis when configured", field: positiveField(func(c *Config) *int { return &c.OAuthRegisterPerMinute })},
	{key: "oauth.authorize_total_per_minute", def: strconv.Itoa(oauth.DefaultTotalAuthorizationsPerMinute), help: "OAuth authorization requests per minute from all client addresses together, shared through Redis when configured", field: positiveField(func(c *Config) *int { return &c.OAuthAuthorizeTotalPerMinute })},
	{key: "oauth.register_total_per_minute", def: strconv.Itoa(oauth.DefaultTotalRegistrationsPerMinute), help: "OAuth client registrations per minute from all client addresses together, shared through Redis when configured", field: positiveField(func(c *Config) *int { return &c.OAuthRegisterTotalPerMinute })},
	{key: "oauth.max_unused_clients", def: strconv.Itoa(oauth.DefaultMaxUnusedClients), help: "registered OAuth clients that never obtained a token kept at most; past it each registration deletes the oldest", field: positiveField(func(c *Config) *int { return &c.OAuthMaxUnusedClients })},
	{key: "oauth.max_login_sessions", def: strconv.Itoa(oauth.DefaultMaxLoginSessions), help: "OAuth login sessions (authorize to consent) kept at most; past it each new one deletes the oldest", field: positiveField(func(c *Config) *int { return &c.OAuthMaxLoginSessions })},
	{key: "oauth.login_ttl", def: oauth.DefaultLoginTTL.String(), help: "how long a browser's OAuth login session lives (authorize → consent) before it is refused and purged", field: durationField(func(c *Config) *time.Duration { return &c.OAuthLoginTTL })},
	{key: "oauth.unused_client_ttl", def: "24h", help: "how long a registered OAuth client that never obtained a token is kept before the purge deletes it", field: durationField(func(c *Config) *time.Duration { return &c.OAuthUnusedClientTTL })},
	{key: "oauth.revoked_grant_retention", def: "720h", help: "how long a revoked OAuth consent stays listed (admin list-consents --include-revoked) once none of its tokens is left", field: durationField(func(c *Config) *time.Duration { return &c.OAuthRevokedConsentRetention })},
	{key: "oauth.purge_interval", def: "10m", help: "how often each replica purges expired OAuth codes, login sessions, tokens, unused clients and old revoked consents (one replica at a time)", field: durationField(func(c *Config) *time.Duration { return &c.OAuthPurgeInterval })},
	{key: "catalog.workflow_retention", def: "720h", help: "how long a dispatched workflow is kept, and replayable with workflow_get, before the purge deletes it (after that: not_found)", field: durationField(func(c *Config) *time.Duration { return &c.WorkflowRetention })},
	{key: "catalog.workflow_purge_interval", def: "10m", help: "how often each replica deletes the workflows older than catalog.workflow_retention, in batches (one replica at a time)", field: durationField(func(c *Config) *time.Duration { return &c.WorkflowPurgeInterval })},
	{key: "catalog.dispatches_per_hour", def: "60", help: "workflow_dispatch calls per principal per hour, shared through Redis when configured; past it 429 rate_limited (budget dispatch) before anything is read or stored", field: positiveField(func(c *Config) *int { return &c.DispatchesPerHour })},
	{key: "audit.mode", def: "off", help: "the audit record of authenticated tool calls (docs/audit.md): off, best_effort (a full queue drops and counts) or required (a call whose record cannot be queued fails with audit_unavailable)", field: parsedField(func(c *Config) *audit.Mode { return &c.AuditMode }, func(v string) (audit.Mode, error) {
		m, ok := audit.ParseMode(v)
		if !ok {
			return "", fmt.Errorf("want off, best_effort or required")
		}
		return m, nil
	}, func(m audit.Mode) string { return string(m) })},
	{key: "audit.checkpoint_interval", def: "1m", help: "how often the audit writer signs its chain head (a checkpoint) when it moved; one more is signed at shutdown", field: durationField(func(c *Config) *time.Duration { return &c.AuditCheckpointInterval })},
	{key: "audit.anonymous", def: "false", help: "also record the anonymous reads of /mcp/forgejo (principal kind anonymous, keyed by address) when audit.mode is on", field: boolField(func(c *Config) *bool { return &c.AuditAnonymous })},
	{key: "audit.retention", def: "0s", help: "how long an audit record is kept before the purge deletes it, keeping a signed checkpoint at the gap so admin audit verify still runs across it; 0s keeps every record", field: parsedField(func(c *Config) *time.Duration { return &c.AuditRetention }, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("want 0s (keep every record) or a positive duration such as 2160h")
		}
		return d, nil
	}, time.Duration.String)},
	{key: "audit.purge_interval", def: "10m", help: "how often each replica deletes the audit records older than audit.retention (one replica at a time)", field: durationField(func(c *Config) *time.Duration { return &c.AuditPurgeInterval })},
	{key: "oauth.client_metadata_hosts", help: "comma-separated hosts whose https URLs clients may use as client_id (Client ID Metadata Documents, fetched by the gateway); empty: off", field: field{
		set: func(c *Config, v string) error {
			var hosts []string
			for _, h := range splitList(v) {
				if strings.ContainsAny(h, "/:@*") || strings.TrimSpace(h) != h {
					return fmt.Errorf("%q is not a host name (no scheme, port, path or wildcard)", h)
				}
				hosts = append(hosts, strings.ToLower(h))
			}
			c.OAuthClientMetadataHosts = hosts
			return nil
		},
		show: func(c *Config) string { return strings.Join(c.OAuthClientMetadataHosts, ",") },
	}},
	{key: "oauth.client_metadata_allow_loopback", def: "false", help: "let client metadata documents live on loopback addresses (tests and local development only)", field: boolField(func(c *Config) *bool { return &c.OAuthClientMetadataAllowLoopback })},
	{key: "oauth.client_metadata_ports", help: "comma-separated ports besides 443 that client_id URLs of client metadata documents may name (any other is refused before its host is resolved); empty: 443 only", field: field{
		set: func(c *Config, v string) error {
			var ports []int
			for _, p := range splitList(v) {
				if !upstream.IsPort(p) {
					return fmt.Errorf("%q is not a port (1-65535)", p)
				}
				n, _ := strconv.Atoi(p)
				ports = append(ports, n)
			}
			c.OAuthClientMetadataPorts = ports
			return nil
		},
		show: func(c *Config) string { return joinShown(c.OAuthClientMetadataPorts, strconv.Itoa) },
	}},
	{key: "oauth.client_metadata_fetches_per_minute", def: strconv.Itoa(oauth.DefaultClientMetadataFetchesPerMinute), help: "client metadata documents one client address may make the gateway fetch per minute (cached documents and failures cost none); past it 429 with Retry-After; shared through Redis when configured", field: positiveField(func(c *Config) *int { return &c.OAuthClientMetadataFetchesPerMinute })},
	{key: "oauth.client_metadata_host_fetches_per_minute", def: strconv.Itoa(oauth.DefaultClientMetadataHostFetchesPerMinute), help: "new client metadata documents the gateway may fetch from one host per minute (only usable documents spend it); shared through Redis when configured", field: positiveField(func(c *Config) *int { return &c.OAuthClientMetadataHostFetchesPerMinute })},
	{key: "oauth.client_metadata_total_fetches_per_minute", def: strconv.Itoa(oauth.DefaultClientMetadataTotalFetchesPerMinute), help: "new client metadata documents all client addresses together may make the gateway fetch per minute (only usable documents spend it); shared through Redis when configured", field: positiveField(func(c *Config) *int { return &c.OAuthClientMetadataTotalFetchesPerMinute })},
	{key: "oauth.app_redirect_schemes", def: strings.Join(oauth.DefaultAppRedirectSchemes, ","), help: "comma-separated single-label private-use schemes (cursor, vscode) clients may register redirect URIs with; reverse-DNS schemes (com.example.app) are always allowed, ms-msdt, search-ms, javascript and the like never", field: field{
		set: func(c *Config, v string) error {
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
		},
		show: func(c *Config) string { return strings.Join(c.OAuthAppRedirectSchemes, ",") },
	}},
}
