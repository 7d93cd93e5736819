package strictjson

import (
	"bytes"
	"strconv"
)

// LoneSurrogate reports whether JSON text holds a \u escape of a UTF-16
// surrogate that is not part of a valid pair. encoding/json silently
// decodes one to U+FFFD, so two readers of such text can disagree on its
// strings; json.Valid accepts it.
func LoneSurrogate(text []byte) bool {
	for i := 0; i+1 < len(text); i++ {
		// Most text holds no escape at all: jump to the next backslash.
		k := bytes.IndexByte(text[i:], '\\')
		if k < 0 {
			return false
		}
		if i += k; i+1 >= len(text) {
			return false
		}
		if text[i+1] != 'u' {
			i++ // skip the escaped character, e.g. the second '\' of "\\"
			continue
		}
		r, ok := hex4(text, i+2)
		switch {
		case !ok:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := hex4(text, i+8)
			if !ok || text[i+6] != '\\' || text[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}

// hex4 reads the four hex digits of a \u escape at text[at:].
func hex4(text []byte, at int) (rune, bool) {
	if at+4 > len(text) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(text[at:at+4]), 16, 16)
	return rune(n), err == nil
}
