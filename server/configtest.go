package server

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// printConfig prints the effective configuration for --config-test, with
// every secret replaced by whether it is set.
func printConfig(w io.Writer, c *Config) error {
	orNone := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	set := func(s string) string {
		if s == "" {
			return "(unset)"
		}
		return "(set)"
	}
	origin := func(u fmt.Stringer, isNil bool) string {
		if isNil {
			return "(none)"
		}
		return u.String()
	}
	proxies := make([]string, 0, len(c.TrustedProxies))
	for _, p := range c.TrustedProxies {
		proxies = append(proxies, p.String())
	}
	ports := make([]string, 0, len(c.OAuthClientMetadataPorts))
	for _, p := range c.OAuthClientMetadataPorts {
		ports = append(ports, strconv.Itoa(p))
	}
	lines := [][2]string{
		{"listen", c.Listen}, {"public_url", c.PublicURL}, {"data_dir", c.DataDir},
		{"database.url", set(c.DatabaseURL)}, {"log.level", c.LogLevel},
		{"shutdown_grace", c.ShutdownGrace.String()}, {"http.write_timeout", c.WriteTimeout.String()},
		{"http.read_header_timeout", c.ReadHeaderTimeout.String()},
		{"runtime.gc_percent", formatGCPercent(c.GCPercent)}, {"runtime.memory_limit", formatMemoryLimit(c.MemoryLimit)},
		{"http.max_connections", fmt.Sprint(c.MaxConnections)}, {"http.max_connections_per_ip", fmt.Sprint(c.MaxConnectionsPerIP)},
		{"http.max_in_flight", fmt.Sprint(c.MaxInFlight)}, {"http.max_in_flight_per_ip", fmt.Sprint(c.MaxInFlightPerIP)},
		{"http.body_budget_bytes", fmt.Sprint(c.BodyBudgetBytes)}, {"http.body_budget_per_ip_bytes", fmt.Sprint(c.BodyBudgetPerIPBytes)},
		{"http.client_ipv6_prefix", fmt.Sprint(c.ClientIPv6Prefix)},
		{"forgejo.origin", origin(c.ForgejoOrigin, c.ForgejoOrigin == nil)},
		{"forgejo.io_timeout", c.ForgejoIOTimeout.String()},
		{"forgejo.token", set(c.ForgejoToken)}, {"forgejo.token_file", orNone(c.ForgejoTokenFile)},
		{"forgejo.username", orNone(c.ForgejoUsername)}, {"forgejo.password", set(c.ForgejoPassword)},
		{"forgejo.password_file", orNone(c.ForgejoPassFile)},
		{"github.api_origin", origin(c.GitHubAPIOrigin, c.GitHubAPIOrigin == nil)},
		{"github.io_timeout", c.GitHubIOTimeout.String()},
		{"github.app_id", fmt.Sprint(c.GitHubAppID)}, {"github.private_key_file", orNone(c.GitHubAppKeyFile)},
		{"metrics.listen", orNone(c.MetricsListen)},
		{"tracing.otlp_endpoint", orNone(urlString(c.TracingEndpoint))},
		{"tracing.sample_ratio", strconv.FormatFloat(c.TracingSampleRatio, 'g', -1, 64)},
		{"ratelimit.redis_url", set(c.RedisURL)},
		{"ratelimit.read_per_minute", fmt.Sprint(c.ReadPerMinute)}, {"ratelimit.write_per_minute", fmt.Sprint(c.WritePerMinute)},
		{"ratelimit.ip_ceiling_per_minute", fmt.Sprint(c.IPCeilingPerMinute)},
		{"ratelimit.refused_bearers_per_minute", fmt.Sprint(c.RefusedBearersPerMinute)},
		{"cursor.secret_file", orNone(c.CursorSecretFile)}, {"cursor.ttl", c.CursorTTL.String()},
		{"tls.cert_file", orNone(c.TLSCertFile)}, {"tls.key_file", orNone(c.TLSKeyFile)},
		{"trusted_proxies", orNone(strings.Join(proxies, ","))},
		{"allowed_origins", orNone(strings.Join(c.AllowedOrigins, ","))},
		{"oidc.issuer", orNone(c.OIDCIssuer)}, {"oidc.client_id", orNone(c.OIDCClientID)},
		{"oidc.client_secret", set(c.OIDCClientSecret)}, {"oidc.client_secret_file", orNone(c.OIDCClientSecretFile)},
		{"oidc.scopes", strings.Join(c.OIDCScopes, " ")},
		{"oauth.authorize_per_minute", fmt.Sprint(c.OAuthAuthorizePerMinute)},
		{"oauth.register_per_minute", fmt.Sprint(c.OAuthRegisterPerMinute)},
		{"oauth.login_ttl", c.OAuthLoginTTL.String()}, {"oauth.unused_client_ttl", c.OAuthUnusedClientTTL.String()},
		{"oauth.revoked_grant_retention", c.OAuthRevokedGrantRetention.String()},
		{"oauth.purge_interval", c.OAuthPurgeInterval.String()},
		{"catalog.workflow_retention", c.WorkflowRetention.String()},
		{"catalog.workflow_purge_interval", c.WorkflowPurgeInterval.String()},
		{"catalog.dispatches_per_hour", fmt.Sprint(c.DispatchesPerHour)},
		{"oauth.client_metadata_hosts", orNone(strings.Join(c.OAuthClientMetadataHosts, ","))},
		{"oauth.client_metadata_allow_loopback", fmt.Sprint(c.OAuthClientMetadataAllowLoopback)},
		{"oauth.client_metadata_ports", orNone(strings.Join(ports, ","))},
		{"oauth.client_metadata_fetches_per_minute", fmt.Sprint(c.OAuthClientMetadataFetchesPerMinute)},
		{"oauth.client_metadata_total_fetches_per_minute", fmt.Sprint(c.OAuthClientMetadataTotalFetchesPerMinute)},
		{"oauth.app_redirect_schemes", orNone(strings.Join(c.OAuthAppRedirectSchemes, ","))},
	}
	fmt.Fprintln(w, "configuration OK")
	for _, l := range lines {
		fmt.Fprintf(w, "  %-28s %s\n", l[0], l[1])
	}
	return nil
}

// urlString is u as text, "" for nil.
func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}
