package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client ID Metadata Documents (MCP authorization 2025-11-25, "SHOULD
// support"): a client whose client_id is an https URL of a JSON document of
// its metadata, fetched instead of registered. It is the gateway's only
// request to an origin a caller chooses, so it is opt-in and fenced: only
// hosts on an allowlist, over https with no redirects, within a timeout and
// a size bound, to public addresses only (the name is resolved, every
// address checked, and the connection made to a checked address, so a DNS
// answer cannot change between check and connect), cached as the answer's
// HTTP caching headers allow.

// ClientMetadataConfig configures Client ID Metadata Documents.
type ClientMetadataConfig struct {
	// Hosts are the host names client_id URLs may name; empty turns the
	// feature off (the default).
	Hosts []string
	// AllowLoopback lets a document live on a loopback address; for tests
	// and local development only.
	AllowLoopback bool
	// RootCAs verify the documents' servers; nil means the system's roots
	// (which SSL_CERT_FILE can replace).
	RootCAs *x509.CertPool
}

// Client ID Metadata Document bounds.
const (
	metadataFetchTimeout = 5 * time.Second
	maxMetadataBytes     = 64 << 10
	maxMetadataURLBytes  = 1024
	// defaultMetadataTTL is how long a document without caching headers is
	// kept; maxMetadataTTL caps what headers may ask for.
	defaultMetadataTTL = 5 * time.Minute
	maxMetadataTTL     = 24 * time.Hour
	maxMetadataEntries = 256
)

// The ways a client_id URL or its document is refused.
var (
	errMetadataURL      = errors.New("client_id is not an https URL with a path")
	errMetadataHost     = errors.New("client_id host is not in oauth.client_metadata_hosts")
	errMetadataAddress  = errors.New("client_id host does not resolve to public addresses only")
	errMetadataRedirect = errors.New("the client metadata document answered with a redirect")
	errMetadataStatus   = errors.New("the client metadata document could not be fetched")
	errMetadataTooLarge = errors.New("the client metadata document is larger than 64 KiB")
	errMetadataDocument = errors.New("the client metadata document is not valid")
)

// isMetadataURL reports whether a client_id names a metadata document
// rather than a registered client (whose IDs start with "cli_").
func isMetadataURL(clientID string) bool { return strings.HasPrefix(clientID, "https://") }

// clientDocument is a fetched, validated client metadata document.
type clientDocument struct {
	ClientID     string
	ClientName   string
	RedirectURIs []string
}

// metadataFetcher fetches and caches client metadata documents.
type metadataFetcher struct {
	hosts         []string
	allowLoopback bool
	client        *http.Client
	resolver      *net.Resolver
	now           func() time.Time

	mu    sync.Mutex
	cache map[string]cachedDocument

	// redirects is the server's redirect URI rule, which a document's
	// redirect URIs meet as a registration's do.
	redirects redirectRule
}

type cachedDocument struct {
	doc     clientDocument
	expires time.Time
}

// newMetadataFetcher returns the fetcher of cfg, or nil when the feature
// is off.
func newMetadataFetcher(cfg ClientMetadataConfig) *metadataFetcher {
	if len(cfg.Hosts) == 0 {
		return nil
	}
	f := &metadataFetcher{
		allowLoopback: cfg.AllowLoopback, resolver: net.DefaultResolver, now: time.Now,
		cache: map[string]cachedDocument{},
	}
	for _, h := range cfg.Hosts {
		f.hosts = append(f.hosts, strings.ToLower(h))
	}
	transport := &http.Transport{
		Proxy:                  nil, // the checked address is the one connected to
		DialContext:            f.dial,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    metadataFetchTimeout,
		ResponseHeaderTimeout:  metadataFetchTimeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableCompression:     true,
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
	}
	f.client = &http.Client{
		Transport: transport,
		Timeout:   metadataFetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // never followed: refused below
		},
	}
	return f
}

// checkURL checks a client_id URL before anything is fetched.
func (f *metadataFetcher) checkURL(clientID string) (*url.URL, error) {
	u, err := url.Parse(clientID)
	if err != nil || len(clientID) > maxMetadataURLBytes || u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.Fragment != "" || strings.Contains(clientID, "#") || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("%w: %q", errMetadataURL, clientID)
	}
	if !slices.Contains(f.hosts, strings.ToLower(u.Hostname())) {
		return nil, fmt.Errorf("%w: %q", errMetadataHost, u.Hostname())
	}
	return u, nil
}

// get returns the client's document, from the cache while it is fresh.
func (f *metadataFetcher) get(ctx context.Context, clientID string) (clientDocument, error) {
	if _, err := f.checkURL(clientID); err != nil {
		return clientDocument{}, err
	}
	f.mu.Lock()
	c, ok := f.cache[clientID]
	f.mu.Unlock()
	if ok && f.now().Before(c.expires) {
		return c.doc, nil
	}
	doc, ttl, err := f.fetch(ctx, clientID)
	if err != nil {
		return clientDocument{}, err
	}
	f.store(clientID, doc, ttl)
	return doc, nil
}

// store caches a document for ttl, within maxMetadataEntries.
func (f *metadataFetcher) store(clientID string, doc clientDocument, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ttl <= 0 {
		delete(f.cache, clientID)
		return
	}
	now := f.now()
	if len(f.cache) >= maxMetadataEntries {
		for k, c := range f.cache {
			if !now.Before(c.expires) {
				delete(f.cache, k)
			}
		}
	}
	if _, ok := f.cache[clientID]; ok || len(f.cache) < maxMetadataEntries {
		f.cache[clientID] = cachedDocument{doc: doc, expires: now.Add(ttl)}
	}
}

// fetch GETs and validates one document.
func (f *metadataFetcher) fetch(ctx context.Context, clientID string) (clientDocument, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return clientDocument{}, 0, fmt.Errorf("%w: %w", errMetadataURL, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		if errors.Is(err, errMetadataAddress) {
			return clientDocument{}, 0, err
		}
		return clientDocument{}, 0, fmt.Errorf("%w: %w", errMetadataStatus, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		return clientDocument{}, 0, fmt.Errorf("%w (%d)", errMetadataRedirect, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return clientDocument{}, 0, fmt.Errorf("%w: status %d", errMetadataStatus, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return clientDocument{}, 0, fmt.Errorf("%w: %w", errMetadataStatus, err)
	}
	if len(body) > maxMetadataBytes {
		return clientDocument{}, 0, errMetadataTooLarge
	}
	doc, err := parseClientDocument(clientID, body, f.redirects)
	if err != nil {
		return clientDocument{}, 0, err
	}
	return doc, cacheTTL(resp.Header, f.now()), nil
}

// parseClientDocument validates a document as a registration would be,
// and checks that it names itself.
func parseClientDocument(clientID string, body []byte, rule redirectRule) (clientDocument, error) {
	var md struct {
		ClientID string `json:"client_id"`
		registration
	}
	if err := json.Unmarshal(body, &md); err != nil {
		return clientDocument{}, fmt.Errorf("%w: not a JSON object of client metadata", errMetadataDocument)
	}
	if md.ClientID != clientID {
		return clientDocument{}, fmt.Errorf("%w: its client_id %q is not its URL", errMetadataDocument, md.ClientID)
	}
	if md.ClientName == "" {
		md.ClientName = clientID
	}
	if code, msg := checkRegistration(&md.registration, rule); code != "" {
		return clientDocument{}, fmt.Errorf("%w: %s", errMetadataDocument, msg)
	}
	return clientDocument{ClientID: clientID, ClientName: md.ClientName, RedirectURIs: md.RedirectURIs}, nil
}

// cacheTTL is how long an answer may be reused under its Cache-Control
// (no-store and no-cache: not at all; max-age) or Expires header, capped at
// maxMetadataTTL; without either, defaultMetadataTTL.
func cacheTTL(h http.Header, now time.Time) time.Duration {
	if cc := h.Get("Cache-Control"); cc != "" {
		for _, d := range strings.Split(cc, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
			switch name {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				n, err := strconv.Atoi(strings.Trim(val, `"`))
				if err != nil || n < 0 {
					return 0
				}
				return min(time.Duration(n)*time.Second, maxMetadataTTL)
			}
		}
	}
	if e := h.Get("Expires"); e != "" {
		t, err := http.ParseTime(e)
		if err != nil {
			return 0
		}
		return min(max(t.Sub(now), 0), maxMetadataTTL)
	}
	return defaultMetadataTTL
}

// dial resolves the host, refuses it unless every address is allowed, and
// connects to a checked address.
func (f *metadataFetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := f.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", errMetadataAddress, host)
	}
	for _, ip := range ips {
		if !f.allowed(ip.Unmap()) {
			return nil, fmt.Errorf("%w: %s resolves to %s", errMetadataAddress, host, ip)
		}
	}
	d := net.Dialer{Timeout: metadataFetchTimeout}
	return d.DialContext(ctx, network, net.JoinHostPort(ips[0].Unmap().String(), port))
}

func (f *metadataFetcher) allowed(ip netip.Addr) bool {
	return publicAddr(ip) || f.allowLoopback && ip.IsLoopback()
}

// nonPublic are ranges that IsGlobalUnicast admits but that are not on the
// public internet, or that translate to addresses which may not be.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
}

// publicAddr reports whether ip is a public unicast address.
func publicAddr(ip netip.Addr) bool {
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
