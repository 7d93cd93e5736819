package github

import (
	"bytes"
	"encoding/base64"
)

// A Contents answer is a ~1 KB object around one large string: the file in
// base64, broken into lines by "\n" escapes. Decoding that string with
// encoding/json (validity scan, unescaping) and walking it again for the
// member check cost several milliseconds for a 200 KB document, on every
// fragment (docs/performance.md, "Document fragments"). splitContent lifts
// the string out so the checks and the decoding read only the small rest;
// the string itself is checked here, byte by byte, to hold nothing but
// base64 and "\n" escapes.

// splitContent finds the value of the top-level member spelt exactly
// "content" when it is a string of base64 characters and "\n" escapes, and
// returns the answer with that value emptied (rest) and the string's raw
// bytes (lines). ok is false when the answer has no such member or its
// value holds anything else; the caller then reads the whole answer as
// before. For a valid answer rest is valid JSON holding the same members
// (content now ""); for an invalid one rest is invalid too, since only
// characters of a well-formed string were removed and the text before and
// after it is unchanged. A repeat of the member, under any spelling, stays
// in rest for the member check to refuse.
func splitContent(doc []byte) (rest, lines []byte, ok bool) {
	if len(doc) == 0 || doc[0] != '{' {
		return nil, nil, false
	}
	depth, expectKey := 0, false
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			end := stringEnd(doc, i)
			if end < 0 {
				return nil, nil, false
			}
			if depth == 1 && expectKey && string(doc[i+1:end]) == "content" {
				j := skipSpace(doc, end+1)
				if j >= len(doc) || doc[j] != ':' {
					return nil, nil, false
				}
				j = skipSpace(doc, j+1)
				if j >= len(doc) || doc[j] != '"' {
					return nil, nil, false
				}
				vend := stringEnd(doc, j)
				if vend < 0 || !base64Lines(doc[j+1:vend]) {
					return nil, nil, false
				}
				rest = make([]byte, 0, len(doc)-(vend-j-1))
				rest = append(append(rest, doc[:j+1]...), doc[vend:]...)
				return rest, doc[j+1 : vend], true
			}
			expectKey = false
			i = end
		case '{':
			depth++
			expectKey = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		}
	}
	return nil, nil, false
}

// stringEnd returns the index of the quote closing the JSON string opened
// at doc[open], or -1.
func stringEnd(doc []byte, open int) int {
	for from := open + 1; ; {
		k := bytes.IndexByte(doc[from:], '"')
		if k < 0 {
			return -1
		}
		q := from + k
		backslashes := 0
		for p := q - 1; p > open && doc[p] == '\\'; p-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q
		}
		from = q + 1
	}
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// base64Chars marks the bytes of the standard base64 alphabet and '='.
var base64Chars = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") {
		t[c] = true
	}
	return t
}()

// base64Lines reports whether raw (a JSON string's bytes, between its
// quotes) holds only base64 characters and "\n" escapes.
func base64Lines(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if base64Chars[raw[i]] {
			continue
		}
		if raw[i] == '\\' && i+1 < len(raw) && raw[i+1] == 'n' {
			i++
			continue
		}
		return false
	}
	return true
}

// decodeLines decodes what base64Lines accepted exactly as the strict
// decoder decodes the unescaped string: it skips the line breaks.
func decodeLines(raw []byte) ([]byte, error) {
	text := make([]byte, 0, len(raw))
	for len(raw) > 0 {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			text = append(text, raw...)
			break
		}
		text = append(text, raw[:k]...)
		raw = raw[k+2:] // base64Lines accepted only "\n" escapes
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Strict().Decode(out, text)
	return out[:n], err
}
