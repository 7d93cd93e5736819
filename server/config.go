// Package server loads configuration, wires dependencies, assembles the
// router and runs the HTTP server; main.go only dispatches subcommands here.
package server

import (
	"fmt"
	"net/netip"
	"net/url"
	"time"

	"github.com/agent-gateway/agent-gateway/store/audit"
)

// Config is the gateway's whole configuration after defaults, the YAML
// file, AGENT_GATEWAY_* environment variables and flags (later wins).
type Config struct {
	Listen        string
	PublicURL     string
	DataDir       string
	DatabaseURL   string
	LogLevel      string
	ShutdownGrace time.Duration
	// ShutdownDrain is how long, after SIGTERM, /readyz answers 503 while
	// the listener keeps serving (shutdown_drain).
	ShutdownDrain time.Duration
	WriteTimeout  time.Duration
	// GCPercent and MemoryLimit are the collector policy (runtime.*), set
	// at start unless GOGC or GOMEMLIMIT is in the environment; -1 is
	// GOGC=off, math.MaxInt64 no limit.
	GCPercent   int
	MemoryLimit int64
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's headers; a slowloris client is cut off after it.
	ReadHeaderTimeout time.Duration
	// The bounds on what callers can make the gateway hold at once
	// (docs/architecture.md#load-bounds): open connections in all and per
	// client IP, requests in flight in all and per client IP, and
	// request-body bytes buffered in all and per client IP.
	MaxConnections       int
	MaxConnectionsPerIP  int
	MaxInFlight          int
	MaxInFlightPerIP     int
	BodyBudgetBytes      int64
	BodyBudgetPerIPBytes int64
	// ClientIPv6Prefix is how many leading bits of an IPv6 client address
	// every per-address bound above, and every per-IP budget, counts it
	// by: a host is usually given a whole /64 and picks addresses in it
	// freely (middleware.ClientKey).
	ClientIPv6Prefix int

	ForgejoOrigin    *url.URL // nil: Forgejo tools answer upstream_unconfigured
	ForgejoIOTimeout time.Duration
	ForgejoToken     string // stdio only: the process's own credential
	ForgejoTokenFile string
	ForgejoUsername  string
	ForgejoPassword  string
	ForgejoPassFile  string
	GitHubAPIOrigin  *url.URL
	GitHubIOTimeout  time.Duration
	GitHubAppID      int64
	GitHubAppKeyFile string
	MetricsListen    string
	// TracingEndpoint is the OTLP/HTTP base URL spans go to (the exporter
	// appends /v1/traces); nil turns tracing off.
	TracingEndpoint *url.URL
	// TracingSampleRatio is the share of new traces sampled, 0..1.
	TracingSampleRatio float64
	RedisURL           string
	// RedisKeyPrefix starts every budget key in Redis (ratelimit.key_prefix);
	// empty derives one from PublicURL (BudgetKeyPrefix).
	RedisKeyPrefix string
	ReadPerMinute  int
	WritePerMinute int
	// IPCeilingPerMinute bounds the tool calls one client IP makes with
	// unverified (passthrough) credentials, whichever it sends.
	IPCeilingPerMinute int
	// RefusedBearersPerMinute bounds the bearers /mcp/documents refuses
	// per client IP; past it that address's bearers get 429 without a
	// store lookup.
	RefusedBearersPerMinute int
	CursorSecretFile        string
	CursorTTL               time.Duration
	TLSCertFile             string
	TLSKeyFile              string
	TrustedProxies          []netip.Prefix
	// TrustAllForwarded lifts the plausibility check of TrustedProxies
	// (proxies.go); the gateway warns at every start.
	TrustAllForwarded bool
	AllowedOrigins    []string
	// OwnedToolCalls serves stateless tools/call on the gateway's own
	// path, byte-identical to the SDK's (handlers/toolset/owned.go);
	// false sends every MCP request through the SDK's handler.
	OwnedToolCalls    bool
	publicURLExplicit bool

	// OIDC is the identity provider of the gateway's OAuth authorization
	// server; without OIDCIssuer the OAuth endpoints answer unconfigured.
	OIDCIssuer           string
	OIDCClientID         string
	OIDCClientSecret     string // env only
	OIDCClientSecretFile string
	OIDCScopes           []string

	// OAuth bounds what anonymous callers can make the authorization
	// server hold (docs/architecture.md#load-bounds): per-address limits on
	// the two endpoints that store rows, and how long rows live before the
	// purge removes them.
	OAuthAuthorizePerMinute int
	OAuthRegisterPerMinute  int
	// The gateway-wide rates and the row caps of the same endpoints.
	OAuthAuthorizeTotalPerMinute, OAuthRegisterTotalPerMinute int
	OAuthMaxUnusedClients, OAuthMaxLoginSessions              int
	OAuthLoginTTL                                             time.Duration
	OAuthUnusedClientTTL                                      time.Duration
	OAuthRevokedConsentRetention                              time.Duration
	OAuthPurgeInterval                                        time.Duration
	// WorkflowRetention is how long a dispatched workflow is kept (and
	// replayable with workflow_get) before the purge, which runs every
	// WorkflowPurgeInterval, deletes it.
	WorkflowRetention     time.Duration
	WorkflowPurgeInterval time.Duration
	// DispatchesPerHour bounds the workflows one principal may dispatch,
	// and so store, per hour (besides the write budget): with
	// WorkflowRetention it bounds the workflows a principal keeps stored.
	DispatchesPerHour int

	// OAuthClientMetadataHosts allowlists the hosts of Client ID Metadata
	// Documents; empty keeps them off, since a fetch is the
	// gateway's only request to an origin a caller picks.
	OAuthClientMetadataHosts []string
	// OAuthClientMetadataAllowLoopback lets such a document live on a
	// loopback address: tests and local development only.
	OAuthClientMetadataAllowLoopback bool
	// OAuthClientMetadataPorts are the ports besides 443 such a document's
	// URL may name; any other is refused unresolved, so a caller cannot
	// make the gateway probe ports.
	OAuthClientMetadataPorts []int
	// OAuthClientMetadataFetchesPerMinute and
	// OAuthClientMetadataTotalFetchesPerMinute bound the fetches of such
	// documents per client address and in all: each is an outbound
	// request an anonymous caller can start.
	OAuthClientMetadataFetchesPerMinute      int
	OAuthClientMetadataTotalFetchesPerMinute int
	// OAuthClientMetadataHostFetchesPerMinute bounds the new documents
	// fetched from one host.
	OAuthClientMetadataHostFetchesPerMinute int
	// OAuthAppRedirectSchemes are the single-label private-use schemes
	// (cursor, vscode) clients may register redirect URIs with; reverse-DNS
	// ones (com.example.app) need no listing, and the schemes operating
	// systems run (ms-msdt, search-ms, …) cannot be listed.
	OAuthAppRedirectSchemes []string

	// GitHubCallTimeout is the total deadline of one GitHub call (token,
	// read and its one retry): files are at most 1 MiB (github.call_timeout).
	GitHubCallTimeout time.Duration

	// VerifiedBytesPerMinute is the opt-in budget of diff bytes verified
	// per caller a minute (ratelimit.verified_bytes_per_minute); 0 is off.
	VerifiedBytesPerMinute int64

	// AuditMode and AuditCheckpointInterval are the audit record's
	// settings (docs/audit.md).
	AuditMode               audit.Mode
	AuditCheckpointInterval time.Duration
	// AuditAnonymous records anonymous reads too (audit.anonymous).
	AuditAnonymous bool
	// AuditRetention is how long a record is kept (audit.retention; 0
	// keeps every record); AuditPurgeInterval how often the purge runs.
	AuditRetention     time.Duration
	AuditPurgeInterval time.Duration
}

// Default returns the zero-config configuration: loopback listener,
// SQLite under ./data, no Forgejo origin. It is each setting's def parsed
// by its own parser, so a default is written once, in its settings row.
func Default() Config {
	var c Config
	for _, s := range settings {
		if s.def == "" {
			continue
		}
		if err := s.set(&c, s.def); err != nil {
			panic(fmt.Sprintf("settings: the default of %s, %q, is refused: %v", s.key, s.def, err))
		}
	}
	return c
}

// PublicOrigin is scheme://host of the public URL, the origin browsers send.
func (c *Config) PublicOrigin() string {
	u, err := url.Parse(c.PublicURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
