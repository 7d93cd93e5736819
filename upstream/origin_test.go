package upstream

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParseOrigin(t *testing.T) {
	cases := []struct {
		raw  string
		want string // "" when refused
	}{
		{"https://forge.example", "https://forge.example"},
		{"https://forge.example/", "https://forge.example"},
		{"https://forge.example:8443", "https://forge.example:8443"},
		{"https://forge.example:1", "https://forge.example:1"},
		{"https://forge.example:65535", "https://forge.example:65535"},
		{"HTTPS://Forge.EXAMPLE", "https://forge.example"},
		{"  https://forge.example  ", "https://forge.example"},
		{"https://[2001:db8::1]:443", "https://[2001:db8::1]:443"},
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"http://127.8.9.10", "http://127.8.9.10"},
		{"http://[::1]:3000", "http://[::1]:3000"},
		{"http://localhost:3000", "http://localhost:3000"},
		{"http://LocalHost", "http://localhost"},
		// refused
		{"http://forge.example", ""},
		{"http://10.0.0.1", ""},
		{"http://[::2]", ""},
		{"http://localhost.evil.example", ""},
		{"http://127.0.0.1.nip.io", ""},
		{"http://0x7f000001", ""},
		{"ftp://forge.example", ""},
		{"forge.example", ""},
		{"//forge.example", ""},
		{"https:forge.example", ""},
		{"https://", ""},
		{"https://:443", ""},
		{"https://user@forge.example", ""},
		{"https://user:pass@forge.example", ""},
		{"https://forge.example/api/v1", ""},
		{"https://forge.example//", ""},
		{"https://forge.example?x=1", ""},
		{"https://forge.example#frag", ""},
		{"https://forge.example:port", ""},
		{"https://forge.example:0", ""},
		{"https://forge.example:65536", ""},
		{"https://forge.example:99999", ""},
		{"https://forge.example:", ""},
		{"https://forge.example:-1", ""},
		{"https://forge .example", ""},
		{"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := ParseOrigin(tc.raw)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("accepted as %v", u)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if u.String() != tc.want {
				t.Fatalf("origin = %q, want %q", u, tc.want)
			}
			if u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
				t.Fatalf("origin carries more than scheme and host: %#v", u)
			}
		})
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.255.255.254": true,
		"::1": true, "[::1]": true, "::ffff:127.0.0.1": true,
		"128.0.0.1": false, "0.0.0.0": false, "::": false, "localhost.": false, "example.com": false, "": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestPath(t *testing.T) {
	cases := []struct {
		name     string
		segments []string
		wantPath string
		wantRaw  string
		refused  bool
	}{
		{"plain", []string{"api", "v1", "repos"}, "/api/v1/repos", "/api/v1/repos", false},
		{"slash stays in its segment", []string{"repos", "a/b"}, "/repos/a/b", "/repos/a%2Fb", false},
		{"question mark", []string{"a?b=c"}, "/a?b=c", "/a%3Fb=c", false},
		{"percent", []string{"100%"}, "/100%", "/100%25", false},
		{"percent escape is literal", []string{"%2e%2e"}, "/%2e%2e", "/%252e%252e", false},
		{"hash", []string{"a#b"}, "/a#b", "/a%23b", false},
		{"unicode", []string{"grüße"}, "/grüße", "/gr%C3%BC%C3%9Fe", false},
		{"space", []string{"a b"}, "/a b", "/a%20b", false},
		{"backslash", []string{`a\b`}, `/a\b`, "/a%5Cb", false},
		{"dots inside a name", []string{"..a", "a..", "..."}, "/..a/a../...", "/..a/a../...", false},
		{"empty", []string{"api", ""}, "", "", true},
		{"dot", []string{"api", "."}, "", "", true},
		{"dot dot", []string{"api", "..", "admin"}, "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, raw, err := Path(tc.segments...)
			if tc.refused {
				if err == nil {
					t.Fatalf("accepted as %q", raw)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p != tc.wantPath || raw != tc.wantRaw {
				t.Fatalf("Path = %q, %q; want %q, %q", p, raw, tc.wantPath, tc.wantRaw)
			}
		})
	}
}

// TestPathOnTheWire checks what a server receives: every caller segment
// arrives as exactly one segment, unescaped back to the caller's text.
func TestPathOnTheWire(t *testing.T) {
	var gotRaw, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		gotRaw, gotQuery = r.URL.EscapedPath(), r.URL.RawQuery
	}))
	defer srv.Close()
	origin, _ := url.Parse(srv.URL)
	c := New(Config{Name: "test", Origin: origin})
	defer c.hc.CloseIdleConnections()
	segs := []string{"api", "a/b", "c?d=e", "100%", "grüße", "x y", "#h", "%2F", ";p", "..a"}
	req, err := c.NewRequest(t.Context(), http.MethodGet, url.Values{"q": {"a&b=c"}}, nil, segs...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	parts := strings.Split(strings.TrimPrefix(gotRaw, "/"), "/")
	var decoded []string
	for _, p := range parts {
		s, err := url.PathUnescape(p)
		if err != nil {
			t.Fatalf("segment %q: %v", p, err)
		}
		decoded = append(decoded, s)
	}
	if !slices.Equal(decoded, segs) {
		t.Fatalf("server saw segments %q (raw %s), want %q", decoded, gotRaw, segs)
	}
	if q, _ := url.ParseQuery(gotQuery); q.Get("q") != "a&b=c" || len(q) != 1 {
		t.Fatalf("query = %q", gotQuery)
	}
	for _, bad := range []string{"", ".", ".."} {
		_, err := c.NewRequest(t.Context(), http.MethodGet, nil, nil, "api", bad)
		if ue, ok := err.(*Error); !ok || ue.Kind != KindRequest {
			t.Errorf("segment %q: err = %v, want KindRequest", bad, err)
		}
	}
}

// TestIsPort pins what a configured port may be: 1 to 65535 in decimal
// digits, nothing else.
func TestIsPort(t *testing.T) {
	for p, want := range map[string]bool{
		"1": true, "80": true, "080": true, "65535": true,
		"0": false, "00000": false, "65536": false, "99999": false, "100000": false, "": false,
		"-1": false, "+80": false, " 80": false, "8o": false, "http": false, "0x50": false,
	} {
		if got := IsPort(p); got != want {
			t.Errorf("IsPort(%q) = %v, want %v", p, got, want)
		}
	}
}
