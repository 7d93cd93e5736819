package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestVisible: every character that hides or reorders text is written out
// as an escape; ordinary text in any script, spaces and emoji stay.
func TestVisible(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "Claude Code", "Claude Code"},
		{"other scripts", "Zed — 編集者 résumé ÅÄÖ", "Zed — 編集者 résumé ÅÄÖ"},
		{"emoji", "agent 🤖", "agent 🤖"},
		{"replacement character itself", "a\ufffdb", "a\ufffdb"},
		{"empty", "", ""},
		{"NUL", "a\x00b", `a\u0000b`},
		{"tab and newline", "a\tb\nc\r", `a\u0009b\u000ac\u000d`},
		{"escape sequence", "\x1b[31mred", `\u001b[31mred`},
		{"DEL", "a\x7fb", `a\u007fb`},
		{"C1 controls", "a\u0085b\u009bc", `a\u0085b\u009bc`},
		{"zero-width space", "Claude\u200bCode", `Claude\u200bCode`},
		{"zero-width non-joiner and joiner", "a\u200cb\u200dc", `a\u200cb\u200dc`},
		{"left-to-right and right-to-left marks", "a\u200eb\u200fc", `a\u200eb\u200fc`},
		{"bidi embeddings and overrides", "\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`},
		{"right-to-left override", "Safe\u202eedoC", `Safe\u202eedoC`},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"Arabic letter mark", "a\u061cb", `a\u061cb`},
		{"byte order mark", "\ufeffname", `\ufeffname`},
		{"word joiner and invisible operators", "a\u2060b\u2062c\u2064", `a\u2060b\u2062c\u2064`},
		{"soft hyphen", "Cur\u00adsor", `Cur\u00adsor`},
		{"Mongolian vowel separator", "a\u180eb", `a\u180eb`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"variation selector", "Cursor\ufe0f", `Cursor\ufe0f`},
		{"combining grapheme joiner", "a\u034fb", `a\u034fb`},
		{"Hangul fillers", "\u3164\u115f\uffa0", `\u3164\u115f\uffa0`},
		{"private use", "\uf8ff Apple", `\uf8ff Apple`},
		{"tag characters", "a\U000e0041\U000e007f", `a\U000e0041\U000e007f`},
		{"unassigned", "a\U000e0fffb", `a\U000e0fffb`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"a surrogate's bytes", "a\xed\xa0\x80b", `a\xed\xa0\x80b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Visible(tc.in); got != tc.want {
				t.Fatalf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestConsentShowsNamesVisibly: the consent page escapes hidden
// characters in every person-visible name it is given: the client's name
// and ID, where it returns to, the subject and the projects.
func TestConsentShowsNamesVisibly(t *testing.T) {
	w := httptest.NewRecorder()
	Render(w, 200, "consent.html", Consent{
		ClientName: "Claude\u200b Code\u202e", ClientID: "cli_\u2066x", RedirectHost: "evil.example\u202emoc",
		Subject: "alice\u200f", CSRFToken: "t",
		Projects: []ConsentProject{{ID: "prj_1", Name: "project\u2067", Note: "note\u061c"}},
		Scopes:   []ConsentScope{{Name: "documents:read", Description: "read", NewFor: "project\u2067"}},
	})
	body := w.Body.String()
	for _, r := range []string{"\u200b", "\u202e", "\u2066", "\u200f", "\u2067", "\u061c"} {
		if strings.Contains(body, r) {
			t.Errorf("the page carries %U raw", []rune(r)[0])
		}
	}
	for _, want := range []string{`Claude\u200b Code\u202e`, `cli_\u2066x`, `evil.example\u202emoc`, `alice\u200f`, `project\u2067`, `note\u061c`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %s", want)
		}
	}
	if !strings.Contains(body, `value="prj_1"`) {
		t.Error("the project's form value changed")
	}
}
