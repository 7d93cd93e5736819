package middleware

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The IPv6 prefix bounds: one host is usually given a whole /64 (often a
// /56 or /48), and picks any address inside it freely, so an IPv6 address
// alone is no client identity.
const (
	// DefaultIPv6Prefix is the prefix an IPv6 client is counted by when
	// the configuration names none.
	DefaultIPv6Prefix = 64
	// MinIPv6Prefix is the shortest prefix accepted: shorter ones would
	// put whole providers' customers behind one share.
	MinIPv6Prefix = 32
)

// ClientKey is the one rule by which every per-address bound (budgets,
// ceilings, refused bearers, requests in flight, body bytes, connections,
// OAuth limits) counts a client address: an IPv4 address exactly (an
// IPv4-mapped IPv6 address as the IPv4 address it carries), an IPv6
// address by its first ipv6Prefix bits, zone dropped, so a host rotating
// addresses inside its prefix stays one client. ipv6Prefix outside 1..128
// counts as DefaultIPv6Prefix. The zero Addr has the empty key.
func ClientKey(a netip.Addr, ipv6Prefix int) string {
	if !a.IsValid() {
		return ""
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	if ipv6Prefix < 1 || ipv6Prefix > 128 {
		ipv6Prefix = DefaultIPv6Prefix
	}
	p, _ := a.Prefix(ipv6Prefix) // drops the zone; bits are in range
	return p.String()
}

// RequestClientKey returns the key the per-address bounds count r under:
// the one ClientIP settled, or, on a chain without ClientIP (a handler
// mounted alone), the TCP peer's by DefaultIPv6Prefix.
func RequestClientKey(r *http.Request) string {
	if k := RecordFromContext(r.Context()).ClientKey(); k != "" {
		return k
	}
	return ClientKey(peerAddr(r.RemoteAddr), DefaultIPv6Prefix)
}

// ClientIP decides the client address: the full address for logs, and its
// ClientKey (IPv6 by ipv6Prefix bits) for every per-address bound.
// X-Forwarded-For is believed only when the direct peer is a listed trusted
// proxy; then the rightmost address that is not itself a trusted proxy is the
// client. Everything else uses the TCP peer. ipv6Prefix 0 is
// DefaultIPv6Prefix; one outside MinIPv6Prefix..128 panics (a
// construction-time misconfiguration: the configuration refuses it).
func ClientIP(trusted []netip.Prefix, ipv6Prefix int) func(http.Handler) http.Handler {
	if ipv6Prefix == 0 {
		ipv6Prefix = DefaultIPv6Prefix
	}
	if ipv6Prefix < MinIPv6Prefix || ipv6Prefix > 128 {
		panic(fmt.Sprintf("middleware.ClientIP: IPv6 prefix /%d outside /%d../128", ipv6Prefix, MinIPv6Prefix))
	}
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip := peerAddr(r.RemoteAddr)
			if ip.IsValid() && isTrusted(ip) {
				hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
				for i := len(hops) - 1; i >= 0; i-- {
					a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
					if err != nil {
						break
					}
					ip = a
					if !isTrusted(a) {
						break
					}
				}
			}
			RecordFromContext(r.Context()).setClient(ip, ipv6Prefix)
			next.ServeHTTP(w, r)
		})
	}
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a
}
