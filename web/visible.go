package web

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names that reach a person (an OAuth client's name on the consent page
// and in `admin list-clients`, a project's name, a subject) come from
// anyone who can register a client or from an identity provider. Control
// characters, bidirectional overrides and isolates, zero-width and other
// invisible characters let such a name read as another one ("Claude
// Code" with a zero-width space is not Claude Code) or reorder the text
// around it. Visible writes them out as escapes instead, so what is there
// shows: rows stored before any check at registration stay harmless.

// Hidden reports whether a person shown r would not see it for what it
// is: a control character (C0, DEL, C1), a format character (the
// bidirectional controls U+202A–U+202E and U+2066–U+2069, the marks
// U+200E, U+200F and U+061C, the zero-width U+200B–U+200D, U+2060 and
// U+FEFF, soft hyphen, tags, …), a line or paragraph separator, a
// private-use or unassigned code point, or a default-ignorable one that
// renders as nothing (variation selectors, the Hangul fillers, U+034F).
func Hidden(r rune) bool {
	switch {
	case r == ' ':
		return false
	case !unicode.IsGraphic(r):
		return true // Cc, Cf, Cs, Co, Cn, Zl, Zp
	}
	return unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// Visible returns s with every Hidden character written as a Go-style
// escape (\u202e, \U000e0041) and every byte that is not UTF-8 as \xNN;
// anything else is kept as it is.
func Visible(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, Hidden) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Hidden(r) && r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04x`, r)
		case Hidden(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
