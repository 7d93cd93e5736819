// Package jsonwire writes JSON text exactly as encoding/json writes it,
// for the hot writers that do without reflection: the owned tools/call
// answer (handlers/toolset), a document fragment's result
// (handlers/documents) and the audit record's canonical encoding
// (store/audit). Each is held to encoding/json by a differential test;
// this package holds only what they share.
package jsonwire

import "unicode/utf8"

// AppendString appends s as a JSON string exactly as encoding/json
// writes a string with HTML escaping (which is also how the SDK's
// TextContent puts a result's text on the wire): `"` and `\` and the control characters
// escaped (\b \f \n \r \t by name, the rest as \u00xx), '<' '>' '&' as
// \u003c \u003e \u0026, U+2028 and U+2029 as \u2028 \u2029, and each byte
// of invalid UTF-8 as \ufffd. It writes into the caller's buffer, where
// json.Encoder escapes into a buffer of its own, copies it out and
// allocates an encoder per call. TestAppendString and FuzzAppendString
// hold it to encoding/json.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, &htmlSafe) }

// AppendStringKeepHTML appends s as AppendString does but leaves '<', '>'
// and '&' as they are: encoding/json's string with SetEscapeHTML(false),
// how every tool result is encoded (toolset.EncodeJSON).
func AppendStringKeepHTML(dst []byte, s string) []byte { return appendString(dst, s, &plainSafe) }

// AppendStringInString appends the JSON string of s as
// AppendStringKeepHTML writes it, as that string stands inside a JSON
// string that AppendString writes (whose quotes are the caller's): exactly
// AppendString(nil, string(AppendStringKeepHTML(nil, s))) without its
// first and last byte, in one pass over s and without the inner string. A
// tool result's string member (a document fragment's text) is escaped
// once into the result's JSON and that JSON once more into the answer's
// text block; writing both layers at once saves a pass over the text and
// a copy of it. TestAppendStringInString and FuzzAppendStringInString
// hold it to the two-pass composition.
//
// The inner string keeps '<', '>' and '&', which the outer one escapes
// with one backslash (\u003c); every escape the inner string writes
// starts with a backslash, which the outer one doubles: a newline becomes
// \\n, U+2028 \\u2028, a byte of invalid UTF-8 \\ufffd, and `"` \\\"
// (its inner \" with both characters escaped). The inner string's own
// quotes are \".
func AppendStringInString(dst []byte, s string) []byte {
	dst = append(dst, `\"`...)
	dst = appendEscaped(dst, s, &htmlSafe, escapeTwice)
	return append(dst, `\"`...)
}

// appendString writes s between quotes, escaped.
func appendString(dst []byte, s string, safe *[256]bool) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s, safe, escapeOnce)
	return append(dst, '"')
}

// escapeOnce and escapeTwice start an escape sequence in a JSON string
// and in a JSON string inside a JSON string.
const escapeOnce, escapeTwice = `\`, `\\`

// appendEscaped writes s escaped as encoding/json escapes a string's
// content, the ASCII bytes safe marks as they are and every escape
// sequence started by esc: a backslash for a string, two for a string
// inside a string (AppendStringInString). A multi-byte character is
// checked in line against the table of well-formed UTF-8 (what
// utf8.DecodeRuneInString accepts) instead of decoded: only its validity
// and whether it is U+2028 or U+2029 matter, and a call per character was
// most of the cost of escaping text that is not ASCII. The inner loop
// only finds the next byte to escape; what it passes over is copied in
// one append.
func appendEscaped(dst []byte, s string, safe *[256]bool, esc string) []byte {
	start, i := 0, 0
	for {
		for i < len(s) {
			b := s[i]
			if safe[b] {
				i++
				continue
			}
			if b < utf8.RuneSelf {
				break
			}
			// wellFormed, in line: this is the loop's other hot path.
			x := leads[b]
			size := int(x & 7)
			if size == 0 || len(s)-i < size {
				break
			}
			r := secondRanges[x>>4]
			if c := s[i+1]; c < r.lo || r.hi < c || size > 2 && s[i+2]&0xC0 != 0x80 || size > 3 && s[i+3]&0xC0 != 0x80 ||
				b == 0xE2 && c == 0x80 && s[i+2]&^1 == 0xA8 { // U+2028, U+2029
				break
			}
			i += size
		}
		if i == len(s) {
			break
		}
		dst = append(dst, s[start:i]...)
		switch b := s[i]; b {
		case '\\', '"':
			dst = append(dst, esc...)
			if len(esc) > 1 { // the quote or backslash of the inner escape, escaped
				dst = append(dst, '\\')
			}
			dst = append(dst, b)
		case '<', '>', '&':
			// Only the outermost string escapes these, so with one
			// backslash however deep.
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		case '\b':
			dst = append(append(dst, esc...), 'b')
		case '\f':
			dst = append(append(dst, esc...), 'f')
		case '\n':
			dst = append(append(dst, esc...), 'n')
		case '\r':
			dst = append(append(dst, esc...), 'r')
		case '\t':
			dst = append(append(dst, esc...), 't')
		default:
			dst = append(dst, esc...)
			switch {
			case b < utf8.RuneSelf:
				dst = append(dst, 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			case wellFormed(s, i) == 0:
				dst = append(dst, "ufffd"...)
			default: // U+2028 or U+2029
				dst = append(dst, 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
				i += 2
			}
		}
		i++
		start = i
	}
	return append(dst, s[start:]...)
}

// wellFormed is the length of the well-formed UTF-8 sequence of two to
// four bytes at s[i], or 0 when there is none there (the Unicode
// Standard's table 3-7, as package utf8 reads it: no overlong form, no
// surrogate, nothing past U+10FFFF).
func wellFormed(s string, i int) int {
	x := leads[s[i]]
	size := int(x & 7)
	if size == 0 || len(s)-i < size {
		return 0
	}
	r := secondRanges[x>>4]
	if c := s[i+1]; c < r.lo || r.hi < c {
		return 0
	}
	if size > 2 && s[i+2]&0xC0 != 0x80 {
		return 0
	}
	if size > 3 && s[i+3]&0xC0 != 0x80 {
		return 0
	}
	return size
}

// leads holds, for each byte that starts a multi-byte sequence, its
// length (low three bits) and the index in secondRanges of the range its
// second byte must fall in; 0 for every other byte.
var leads = func() (t [256]uint8) {
	for b := 0xC2; b <= 0xDF; b++ {
		t[b] = 2
	}
	for b := 0xE0; b <= 0xEF; b++ {
		t[b] = 3
	}
	for b := 0xF0; b <= 0xF4; b++ {
		t[b] = 4
	}
	t[0xE0] |= 1 << 4 // no overlong form: U+0800 and up
	t[0xED] |= 2 << 4 // no surrogate: below U+D800
	t[0xF0] |= 3 << 4 // no overlong form: U+10000 and up
	t[0xF4] |= 4 << 4 // up to U+10FFFF
	return t
}()

// secondRanges are the ranges a second byte may fall in.
var secondRanges = [5]struct{ lo, hi byte }{{0x80, 0xBF}, {0xA0, 0xBF}, {0x80, 0x9F}, {0x90, 0xBF}, {0x80, 0x8F}}

const hexDigits = "0123456789abcdef"

// htmlSafe and plainSafe mark the bytes encoding/json writes as they are,
// with HTML escaping and without: ASCII from the space up but the quote
// and the backslash (and '<', '>', '&' with HTML escaping).
var htmlSafe, plainSafe = func() (html, plain [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		plain[b] = b != '"' && b != '\\'
		html[b] = plain[b] && b != '<' && b != '>' && b != '&'
	}
	return html, plain
}()
