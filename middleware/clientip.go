package middleware

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP decides the client address used for anonymous budgets and logs.
// X-Forwarded-For is believed only when the direct peer is a listed trusted
// proxy; then the rightmost address that is not itself a trusted proxy is the
// client. Everything else uses the TCP peer.
func ClientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
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
			rec := RecordFromContext(r.Context())
			rec.mu.Lock()
			if ip.IsValid() {
				rec.clientIP = ip.Unmap().String()
			}
			rec.mu.Unlock()
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
