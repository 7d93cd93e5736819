package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	cases := []struct {
		name    string
		trusted []netip.Prefix
		remote  string
		xff     []string
		want    string
	}{
		{"no proxies configured: peer", nil, "203.0.113.7:4711", []string{"198.51.100.1"}, "203.0.113.7"},
		{"untrusted peer: spoofed XFF ignored", trusted, "203.0.113.7:4711", []string{"198.51.100.1"}, "203.0.113.7"},
		{"trusted peer: client from XFF", trusted, "10.1.2.3:4711", []string{"198.51.100.1"}, "198.51.100.1"},
		{"trusted peer: rightmost untrusted wins over spoofed left", trusted, "10.1.2.3:4711", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"trusted chain skipped", trusted, "10.1.2.3:4711", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"several XFF headers joined in order", trusted, "10.1.2.3:4711", []string{"6.6.6.6", "198.51.100.1, 10.0.0.2"}, "198.51.100.1"},
		{"trusted peer without XFF: peer", trusted, "10.1.2.3:4711", nil, "10.1.2.3"},
		{"trusted peer, garbage XFF: peer", trusted, "10.1.2.3:4711", []string{"not-an-ip"}, "10.1.2.3"},
		{"garbage stops the walk", trusted, "10.1.2.3:4711", []string{"198.51.100.1, junk"}, "10.1.2.3"},
		{"IPv6 trusted peer", trusted, "[::1]:4711", []string{"2001:db8::1"}, "2001:db8::1"},
		{"IPv4-mapped peer is unmapped", trusted, "[::ffff:10.1.2.3]:4711", []string{"198.51.100.1"}, "198.51.100.1"},
		{"IPv4-mapped untrusted peer logged unmapped", nil, "[::ffff:203.0.113.7]:1", nil, "203.0.113.7"},
		{"remote without port", nil, "203.0.113.7", nil, "203.0.113.7"},
		{"unparseable remote leaves it empty", nil, "pipe", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, rec := newReq(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			ClientIP(tc.trusted, 0)(ok).ServeHTTP(httptest.NewRecorder(), r)
			if got := rec.ClientIP(); got != tc.want {
				t.Fatalf("client IP = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestClientKey pins the one rule every per-address bound counts by: IPv4
// exactly, IPv4-mapped IPv6 as IPv4, IPv6 by its prefix with the zone
// dropped, so addresses inside one prefix are one client and the next
// prefix another.
func TestClientKey(t *testing.T) {
	cases := []struct {
		addr   string // "" for the zero Addr
		prefix int
		want   string
	}{
		{"192.0.2.7", 64, "192.0.2.7"},
		{"192.0.2.7", 48, "192.0.2.7"}, // the IPv6 prefix does not touch IPv4
		{"192.0.2.8", 64, "192.0.2.8"}, // the next IPv4 address is another client
		{"::ffff:192.0.2.7", 64, "192.0.2.7"},
		{"::ffff:192.0.2.7", 128, "192.0.2.7"},
		{"2001:db8:1:2::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", 64, "2001:db8:1:2::/64"}, // same /64
		{"2001:db8:1:3::1", 64, "2001:db8:1:3::/64"},                  // the next /64
		{"2001:db8:1:2ff::1", 56, "2001:db8:1:200::/56"},
		{"2001:db8:1:300::1", 56, "2001:db8:1:300::/56"},
		{"2001:db8:1:ffff::1", 48, "2001:db8:1::/48"},
		{"2001:db8:2::1", 48, "2001:db8:2::/48"},
		{"2001:db8:1:2::1", 128, "2001:db8:1:2::1/128"},
		{"2001:db8:1:2::2", 128, "2001:db8:1:2::2/128"},
		{"fe80::1%eth0", 64, "fe80::/64"},
		{"fe80::2%eth1", 64, "fe80::/64"},
		{"fe80::1%eth0", 128, "fe80::1/128"},
		{"::1", 64, "::/64"},
		{"2001:db8:1:2::1", 0, "2001:db8:1:2::/64"},   // no prefix: the default
		{"2001:db8:1:2::1", -8, "2001:db8:1:2::/64"},  // out of range: the default
		{"2001:db8:1:2::1", 129, "2001:db8:1:2::/64"}, // out of range: the default
		{"", 64, ""},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.addr, tc.prefix), func(t *testing.T) {
			var a netip.Addr
			if tc.addr != "" {
				a = netip.MustParseAddr(tc.addr)
			}
			if got := ClientKey(a, tc.prefix); got != tc.want {
				t.Fatalf("ClientKey(%s, %d) = %q, want %q", tc.addr, tc.prefix, got, tc.want)
			}
		})
	}
}

// TestClientIPKeysByPrefix: the middleware records the caller's full
// address for the log and its key for the bounds, from the TCP peer or
// a trusted proxy's X-Forwarded-For alike; a request whose chain had no
// ClientIP is keyed on its peer by the default prefix; a prefix the
// configuration would refuse panics at construction.
func TestClientIPKeysByPrefix(t *testing.T) {
	proxy := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	cases := []struct {
		remote, xff string
		prefix      int
		ip, key     string
	}{
		{"[2001:db8:1:2::a]:1", "", 64, "2001:db8:1:2::a", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::a]:1", "", 56, "2001:db8:1:2::a", "2001:db8:1::/56"},
		{"127.0.0.1:1", "2001:db8:1:2:dead:beef:0:1", 64, "2001:db8:1:2:dead:beef:0:1", "2001:db8:1:2::/64"},
		{"127.0.0.1:1", "::ffff:198.51.100.1", 64, "198.51.100.1", "198.51.100.1"},
		{"[fe80::1%eth0]:1", "", 64, "fe80::1%eth0", "fe80::/64"},
		{"203.0.113.7:1", "2001:db8::1", 64, "203.0.113.7", "203.0.113.7"}, // untrusted peer: its header ignored
		{"pipe", "", 64, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.remote+" "+tc.xff, func(t *testing.T) {
			r, rec := newReq(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			var key string
			ClientIP(proxy, tc.prefix)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { key = RequestClientKey(r) })).ServeHTTP(httptest.NewRecorder(), r)
			if rec.ClientIP() != tc.ip || rec.ClientKey() != tc.key || key != tc.key {
				t.Fatalf("client IP %q key %q (request %q), want %q and %q", rec.ClientIP(), rec.ClientKey(), key, tc.ip, tc.key)
			}
		})
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "[2001:db8:1:2::a]:1"
	if got := RequestClientKey(r); got != "2001:db8:1:2::/64" {
		t.Fatalf("no ClientIP in the chain: key %q", got)
	}
	for _, bad := range []int{16, 31, 129} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ClientIP with /%d did not panic", bad)
				}
			}()
			ClientIP(nil, bad)
		}()
	}
}
