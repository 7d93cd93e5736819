package server

import (
	"strings"
	"testing"
)

// TestPositiveInt pins the one integer setter of both widths: a positive
// decimal that fits the field is set, anything else is refused and leaves
// the field as it was.
func TestPositiveInt(t *testing.T) {
	setInt := positiveInt(func(c *Config) *int { return &c.MaxInFlight })
	setInt64 := positiveInt(func(c *Config) *int64 { return &c.BodyBudgetBytes })
	tests := []struct {
		name, v string
		wide    bool
		want    int64
		ok      bool
	}{
		{"int", "5", false, 5, true},
		{"int with plus sign", "+5", false, 5, true},
		{"int zero", "0", false, 0, false},
		{"int negative", "-1", false, 0, false},
		{"int not a number", "x", false, 0, false},
		{"int empty", "", false, 0, false},
		{"int fraction", "1.5", false, 0, false},
		{"int underscore", "1_000", false, 0, false},
		{"int64 largest", "9223372036854775807", true, 9223372036854775807, true},
		{"int64 overflow", "9223372036854775808", true, 0, false},
		{"int64 zero", "0", true, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			var err error
			var got int64
			if tt.wide {
				err = setInt64(&c, tt.v)
				got = c.BodyBudgetBytes
			} else {
				err = setInt(&c, tt.v)
				got = int64(c.MaxInFlight)
			}
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("set(%q) = %d, %v; want %d, ok=%v", tt.v, got, err, tt.want, tt.ok)
			}
		})
	}
}

// settingFor returns the settings table's entry for key.
func settingFor(t *testing.T, key string) setting {
	t.Helper()
	for _, s := range settings {
		if s.key == key {
			return s
		}
	}
	t.Fatalf("no setting %s", key)
	return setting{}
}

// settingCase is one value given to a setting: kept, it must set what
// field reads to want; refused, the error must contain want and field
// must read as it did on Default.
type settingCase struct {
	v, want string
	ok      bool
}

// checkSetting runs cases against key's setter on a Default config.
func checkSetting(t *testing.T, key string, field func(Config) string, cases []settingCase) {
	t.Helper()
	set := settingFor(t, key).set
	for _, tc := range cases {
		t.Run(tc.v, func(t *testing.T) {
			c := Default()
			before := field(c)
			err := set(&c, tc.v)
			switch {
			case tc.ok && (err != nil || field(c) != tc.want):
				t.Fatalf("set(%q) = %q, %v; want %q", tc.v, field(c), err, tc.want)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("set(%q) = %v, want a refusal saying %s", tc.v, err, tc.want)
			case !tc.ok && field(c) != before:
				t.Fatalf("a refused value changed %s to %q", key, field(c))
			}
		})
	}
}

// TestAppRedirectSchemesSetting: oauth.app_redirect_schemes defaults to
// the IDE schemes DESIGN §8 names, takes a list of single-label schemes
// (lower-cased), may be emptied, and refuses what the redirect rule never
// allows, naming each bad entry.
func TestAppRedirectSchemesSetting(t *testing.T) {
	if got := Default().OAuthAppRedirectSchemes; strings.Join(got, ",") != "cursor,vscode" {
		t.Fatalf("default %v", got)
	}
	checkSetting(t, "oauth.app_redirect_schemes", func(c Config) string { return strings.Join(c.OAuthAppRedirectSchemes, ",") }, []settingCase{
		{"cursor, vscode, Windsurf", "cursor,vscode,windsurf", true},
		{"", "", true},
		{"vscode-insiders", "vscode-insiders", true},
		{"ms-msdt", `"ms-msdt"`, false},
		{"cursor, search-ms", `"search-ms"`, false},
		{"javascript,file", `"javascript" is never a private-use redirect target; not a single-label private-use scheme: "file"`, false},
		{"https", `"https"`, false},
		{"com.example.app", "no dot", false},
		{"cur:sor", "letters, digits", false},
	})
}

// TestPublicURLSetting: public_url is sent to every anonymous caller (the
// OAuth metadata, WWW-Authenticate), so it is an absolute http(s) URL with
// nothing that could carry a secret or change its meaning: no user
// information (not even an empty "@"), no query (not even a bare "?"), no
// fragment (not even a bare "#").
func TestPublicURLSetting(t *testing.T) {
	checkSetting(t, "public_url", func(c Config) string { return c.PublicURL }, []settingCase{
		{"https://gw.example", "https://gw.example", true},
		{"https://gw.example/", "https://gw.example", true},
		{"https://gw.example:8443/agents", "https://gw.example:8443/agents", true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"https://user:secret@gw.example", "user information", false},
		{"https://user@gw.example", "user information", false},
		{"https://@gw.example", "user information", false},
		{"https://:@gw.example", "user information", false},
		{"https://gw.example/?x=1", "query", false},
		{"https://gw.example?", "query", false},
		{"https://gw.example/path?", "query", false},
		{"https://gw.example#frag", "fragment", false},
		{"https://gw.example#", "fragment", false},
		{"https://gw.example/?#", "query", false},
		{"ftp://gw.example", "http(s)", false},
		{"gw.example", "http(s)", false},
		{"https://", "http(s)", false},
		{"https:gw.example", "http(s)", false},
	})
}
