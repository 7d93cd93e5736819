package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// fetch GETs and validates one document.
func (f *metadataFetcher) fetch(ctx context.Context, clientID string) (clientDocument, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
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
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return clientDocument{}, 0, fmt.Errorf("%w: timed out after %s: %w", errMetadataStatus, f.timeout, err)
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
	d := net.Dialer{Timeout: f.timeout}
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
