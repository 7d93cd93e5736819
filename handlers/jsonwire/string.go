// Package jsonwire writes JSON text exactly as encoding/json writes it,
// for the two hot writers that do without reflection: the owned
// tools/call answer (handlers/toolset) and the audit record's canonical
// encoding (store/audit). Each is held to encoding/json by a differential
// test; this package holds only what both share.
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
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// htmlSafe marks the ASCII bytes encoding/json writes as they are when it
// escapes HTML.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()
