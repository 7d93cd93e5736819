package oauth

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
)

func TestKnownParams(t *testing.T) {
	valid := func() url.Values {
		return url.Values{
			"response_type": {"code"}, "client_id": {"cli_x"}, "redirect_uri": {"http://127.0.0.1:9/cb"},
			"scope": {"documents:read"}, "state": {"st-12345678"}, "code_challenge": {strings.Repeat("a", 43)},
			"code_challenge_method": {"S256"}, "resource": {"https://gw.example/mcp/documents"},
		}
	}
	for _, tc := range []struct {
		name   string
		edit   func(q url.Values)
		param  string // the refused parameter, "" for none
		reason string
		kept   func(q url.Values) bool
	}{
		{name: "valid request kept whole", edit: func(url.Values) {}, kept: func(q url.Values) bool { return len(q) == 8 }},
		{name: "unknown parameters dropped", edit: func(q url.Values) {
			q.Set("junk", strings.Repeat("x", 15000))
			q.Set("nonce", "n")
			q.Set("prompt", "login")
		}, kept: func(q url.Values) bool { return q.Get("junk") == "" && q.Get("nonce") == "" && len(q) == 8 }},
		{name: "response_mode query accepted and not kept", edit: func(q url.Values) { q.Set("response_mode", "query") },
			kept: func(q url.Values) bool { return !q.Has("response_mode") }},
		{name: "state at the limit", edit: func(q url.Values) { q.Set("state", strings.Repeat("s", 2048)) },
			kept: func(q url.Values) bool { return len(q.Get("state")) == 2048 }},
		{name: "state one over", edit: func(q url.Values) { q.Set("state", strings.Repeat("s", 2049)) },
			param: "state", reason: "oversized_parameter", kept: func(q url.Values) bool { return !q.Has("state") && q.Has("client_id") }},
		{name: "scope one over", edit: func(q url.Values) { q.Set("scope", strings.Repeat("s", 1025)) }, param: "scope", reason: "oversized_parameter"},
		{name: "code_challenge one over", edit: func(q url.Values) { q.Set("code_challenge", strings.Repeat("c", 129)) }, param: "code_challenge", reason: "oversized_parameter"},
		{name: "client_id one over", edit: func(q url.Values) { q.Set("client_id", strings.Repeat("c", 1025)) }, param: "client_id", reason: "oversized_parameter"},
		{name: "redirect_uri one over", edit: func(q url.Values) {
			q.Set("redirect_uri", "https://a.example/"+strings.Repeat("p", 2049-len("https://a.example/")))
		},
			param: "redirect_uri", reason: "oversized_parameter"},
		{name: "redirect_uri with userinfo", edit: func(q url.Values) { q.Set("redirect_uri", "http://evil@127.0.0.1:9999/cb") },
			param: "redirect_uri", reason: "invalid_redirect_uri"},
		{name: "redirect_uri with a fragment", edit: func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:9/cb#x") },
			param: "redirect_uri", reason: "invalid_redirect_uri"},
		{name: "repeated state", edit: func(q url.Values) { q.Add("state", "other-state") }, param: "state", reason: "repeated_parameter"},
		{name: "repeated client_id", edit: func(q url.Values) { q.Add("client_id", "cli_y") }, param: "client_id", reason: "repeated_parameter"},
		{name: "two resources kept for invalid_target", edit: func(q url.Values) { q.Add("resource", "https://x.example/") },
			kept: func(q url.Values) bool { return len(q["resource"]) == 2 }},
		{name: "many resources bounded", edit: func(q url.Values) {
			for i := 0; i < 50; i++ {
				q.Add("resource", "https://x.example/")
			}
		}, kept: func(q url.Values) bool { return len(q["resource"]) == 2 }},
		{name: "form_post refused", edit: func(q url.Values) { q.Set("response_mode", "form_post") }, param: "response_mode", reason: "unsupported_response_mode"},
		{name: "fragment refused", edit: func(q url.Values) { q.Set("response_mode", "fragment") }, param: "response_mode", reason: "unsupported_response_mode"},
		{name: "client problems first", edit: func(q url.Values) {
			q.Set("state", strings.Repeat("s", 5000))
			q.Set("client_id", strings.Repeat("c", 5000))
		}, param: "client_id", reason: "oversized_parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := valid()
			tc.edit(in)
			out, p := knownParams(in, newRedirectRule(DefaultAppRedirectSchemes))
			switch {
			case tc.param == "" && p != nil:
				t.Fatalf("refused %+v", p)
			case tc.param != "" && (p == nil || p.param != tc.param || string(p.reason) != tc.reason):
				t.Fatalf("problem %+v, want %s/%s", p, tc.param, tc.reason)
			}
			if tc.param != "" && out.Has(tc.param) && tc.param != "response_mode" {
				t.Errorf("the refused %s was kept", tc.param)
			}
			if tc.kept != nil && !tc.kept(out) {
				t.Errorf("kept %v", out)
			}
			if len(out.Encode()) > 9000 {
				t.Errorf("kept %d bytes", len(out.Encode()))
			}
		})
	}
}

// TestPerAddressLimitsKeyByPrefix: /oauth/register and /oauth/authorize
// count a caller by the one client key of every per-address bound: an
// IPv6 address by the configured prefix (default /64), so rotating inside
// it buys no fresh limit, IPv4 exactly, an IPv4-mapped address as IPv4.
func TestPerAddressLimitsKeyByPrefix(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	for _, tc := range []struct {
		name          string
		prefix        int
		first, second string // X-Forwarded-For of two requests through the trusted proxy
		shared        bool
	}{
		{"one /64 at the default prefix", 0, "2001:db8:1:2::a", "2001:db8:1:2:ffff::b", true},
		{"the next /64 at the default prefix", 0, "2001:db8:1:2::a", "2001:db8:1:3::a", false},
		{"two /64s of one /48 at prefix 48", 48, "2001:db8:1:2::a", "2001:db8:1:3::a", true},
		{"two /48s at prefix 48", 48, "2001:db8:1:2::a", "2001:db8:2:2::a", false},
		{"two addresses of one /64 at prefix 128", 128, "2001:db8:1:2::a", "2001:db8:1:2::b", false},
		{"IPv4 exactly", 48, "198.18.0.5", "198.18.0.6", false},
		{"an IPv4-mapped address as its IPv4 address", 0, "198.18.0.5", "::ffff:198.18.0.5", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{Issuer: "https://gw.example"})
			limit := s.limited(limitRegister, 1, 1000, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTooManyRequests) }, writeUnavailable)
			h := middleware.RequestID(middleware.ClientIP(trusted, tc.prefix)(limit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))))
			send := func(xff string) int { return registerThrough(h, xff).Code }
			if code := send(tc.first); code != http.StatusOK {
				t.Fatalf("first request: %d", code)
			}
			want := map[bool]int{true: http.StatusTooManyRequests, false: http.StatusOK}[tc.shared]
			if code := send(tc.second); code != want {
				t.Fatalf("second request from %s after %s: %d, want %d", tc.second, tc.first, code, want)
			}
		})
	}
}

// registerThrough sends a registration to h through the trusted loopback
// proxy, from xff.
func registerThrough(h http.Handler, xff string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/oauth/register", nil)
	r.RemoteAddr = "127.0.0.1:1234"
	r.Header.Set("X-Forwarded-For", xff)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestTotalLimitHoldsAcrossAddresses: each address within its own rate,
// the endpoint still lets through only the gateway-wide rate from all of
// them together, and says which limit refused; a caller past its own rate
// spends nothing of the total.
func TestTotalLimitHoldsAcrossAddresses(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	var reasons []string
	s := New(Config{Issuer: "https://gw.example", Refused: func(endpoint, reason string) { reasons = append(reasons, endpoint+"/"+reason) }})
	limit := s.limited(limitRegister, 2, 5, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTooManyRequests) }, writeUnavailable)
	h := middleware.RequestID(middleware.ClientIP(trusted, 0)(limit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))))
	send := func(xff string) int {
		w := registerThrough(h, xff)
		if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
			t.Errorf("429 from %s without Retry-After", xff)
		}
		return w.Code
	}
	// One address past its own rate spends nothing of the total.
	for i, want := range []int{200, 200, 429, 429, 429} {
		if code := send("198.18.0.1"); code != want {
			t.Fatalf("request %d from one address: %d, want %d", i, code, want)
		}
	}
	// Three more of the total's five from three addresses, then nobody.
	for i := 2; i <= 4; i++ {
		if code := send(fmt.Sprintf("198.18.0.%d", i)); code != http.StatusOK {
			t.Fatalf("address %d: %d", i, code)
		}
	}
	for i := 5; i <= 8; i++ {
		if code := send(fmt.Sprintf("198.18.0.%d", i)); code != http.StatusTooManyRequests {
			t.Fatalf("address %d past the total: %d", i, code)
		}
	}
	want := []string{"register/rate_limited", "register/rate_limited", "register/rate_limited",
		"register/rate_limited_total", "register/rate_limited_total", "register/rate_limited_total", "register/rate_limited_total"}
	if !slices.Equal(reasons, want) {
		t.Fatalf("refusals %v, want %v", reasons, want)
	}
}
