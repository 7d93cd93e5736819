package github

import (
	"bytes"
	"encoding/base64"
	"errors"
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
// decoder decodes the unescaped string, without first copying the string
// out of its escapes: each line's whole 4-character groups are decoded in
// place, a group broken across a line break is joined in a small carry,
// and padding ends the data as it does in one string (anything after a
// group ending in "=" is refused). An unfinished group at the end is
// refused, as the padded alphabet refuses it. FuzzContentsJSON holds this
// to the one-string reading.
func decodeLines(raw []byte) ([]byte, error) {
	out := make([]byte, 0, base64.StdEncoding.DecodedLen(len(raw)))
	var carry [4]byte
	held, padded := 0, false
	decode := func(groups []byte) error {
		if len(groups) == 0 {
			return nil
		}
		if padded {
			return errAfterPadding
		}
		n, err := strictBase64.Decode(out[len(out):cap(out)], groups)
		if err != nil {
			return err
		}
		out = out[:len(out)+n]
		padded = groups[len(groups)-1] == '='
		return nil
	}
	for len(raw) > 0 {
		line := raw
		if k := bytes.IndexByte(raw, '\\'); k >= 0 {
			line, raw = raw[:k], raw[k+2:] // base64Lines accepted only "\n" escapes
		} else {
			raw = nil
		}
		if held > 0 {
			k := copy(carry[held:], line)
			held, line = held+k, line[k:]
			if held < len(carry) {
				continue
			}
			if err := decode(carry[:]); err != nil {
				return nil, err
			}
			held = 0
		}
		whole := len(line) &^ 3
		if err := decode(line[:whole]); err != nil {
			return nil, err
		}
		held = copy(carry[:], line[whole:])
	}
	if held > 0 {
		return nil, errUnfinishedGroup
	}
	return out, nil
}

var (
	strictBase64       = base64.StdEncoding.Strict()
	errAfterPadding    = errors.New("base64 data after the padding")
	errUnfinishedGroup = errors.New("base64 data ends inside a 4-character group")
)
