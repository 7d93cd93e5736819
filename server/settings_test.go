package server

import (
	"fmt"
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
// the IDE schemes docs/oauth.md#redirect-schemes names, takes a list of
// single-label schemes (lower-cased), may be emptied, and refuses what the
// redirect rule never allows, naming each bad entry.
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

// TestEveryRowIsComplete: each row parses and prints its own field, so a
// key added without a show (or a set) fails here, not as a panic in
// --config-test; keys and flags are spelled once.
func TestEveryRowIsComplete(t *testing.T) {
	keys, flags := map[string]bool{}, map[string]bool{}
	for _, s := range settings {
		switch {
		case s.key == "":
			t.Errorf("a row without a key: %+v", s)
		case s.set == nil || s.show == nil:
			t.Errorf("%s: a row needs both set and show", s.key)
		case keys[s.key]:
			t.Errorf("%s: listed twice", s.key)
		case s.flag != "" && flags[s.flag]:
			t.Errorf("%s: flag --%s taken by another row", s.key, s.flag)
		case s.help == "":
			t.Errorf("%s: no help", s.key)
		}
		keys[s.key], flags[s.flag] = true, s.flag != ""
	}
}

// TestDefaultIsTheRows: Default is the rows' defaults and nothing else.
// Each row's field in Default is what its def gives on a zero Config (the
// zero value where def is ""), so a default written outside its row, or a
// def its own parser refuses, fails here.
func TestDefaultIsTheRows(t *testing.T) {
	d := Default()
	for _, s := range settings {
		var alone Config
		if s.def != "" {
			if err := s.set(&alone, s.def); err != nil {
				t.Errorf("%s: def %q refused: %v", s.key, s.def, err)
				continue
			}
		}
		if got, want := s.show(&d), s.show(&alone); got != want {
			t.Errorf("%s: Default has %q, its row's def %q gives %q", s.key, got, s.def, want)
		}
	}
	// The lists Default hands out are its own: one Config's edit must not
	// reach the next.
	d.OIDCScopes[0], d.OAuthAppRedirectSchemes[0] = "edited", "edited"
	if again := Default(); again.OIDCScopes[0] == "edited" || again.OAuthAppRedirectSchemes[0] == "edited" {
		t.Error("Default shares a list between calls")
	}
}

// TestPrintConfigEveryRow: --config-test prints one line per row, in table
// order, each the row's printed value, so a new key is printed by being a
// row and cannot be missed or printed twice.
func TestPrintConfigEveryRow(t *testing.T) {
	l, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := printConfig(&out, &l.Config); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[0] != "configuration OK" || len(lines) != 1+len(settings) {
		t.Fatalf("%d lines for %d settings:\n%s", len(lines), len(settings), out.String())
	}
	for i, s := range settings {
		want := fmt.Sprintf("  %-28s %s", s.key, s.printed(&l.Config))
		if lines[1+i] != want {
			t.Errorf("line %d = %q, want %q", 1+i, lines[1+i], want)
		}
	}
}

// TestPrintedSecrets: the one rule for secrets: an envOnly or hidden row
// prints only (set) or (unset), whatever show returns; another row prints
// its value, (none) when empty.
func TestPrintedSecrets(t *testing.T) {
	value := func(v string) field {
		return field{set: func(*Config, string) error { return nil }, show: func(*Config) string { return v }}
	}
	for _, tc := range []struct {
		s    setting
		want string
	}{
		{setting{envOnly: true, field: value("hunter2")}, "(set)"},
		{setting{envOnly: true, field: value("")}, "(unset)"},
		{setting{hide: true, field: value("postgres://u:hunter2@db/x")}, "(set)"},
		{setting{hide: true, field: value("")}, "(unset)"},
		{setting{field: value("")}, "(none)"},
		{setting{field: value("30s")}, "30s"},
	} {
		if got := tc.s.printed(&Config{}); got != tc.want {
			t.Errorf("envOnly=%v hide=%v show %q: printed %q, want %q", tc.s.envOnly, tc.s.hide, tc.s.show(nil), got, tc.want)
		}
	}
}
