package middleware

import (
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
			ClientIP(tc.trusted)(ok).ServeHTTP(httptest.NewRecorder(), r)
			if got := rec.ClientIP(); got != tc.want {
				t.Fatalf("client IP = %q, want %q", got, tc.want)
			}
		})
	}
}
