package strictjson

import (
	"bytes"
	"encoding/json"
)

// Members calls fn with each member of obj, a JSON object json.Valid
// accepted, in order: the name unescaped, the value's exact text. It stops
// when fn returns false. It reads only string bounds and brackets, relying
// on the text being valid, so it allocates only for names with escapes:
// the request envelope, the tool call's params and its arguments are all
// split with it.
func Members(obj []byte, fn func(name string, value json.RawMessage) bool) {
	i := SkipSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		end := StringEnd(obj, i)
		name := string(obj[i+1 : end])
		if bytes.IndexByte(obj[i:end], '\\') >= 0 {
			_ = json.Unmarshal(obj[i:end+1], &name) // valid: json.Valid passed
		}
		i = SkipSpace(obj, SkipSpace(obj, end+1)+1) // past ':'
		vend := valueEnd(obj, i)
		if !fn(name, obj[i:vend]) {
			return
		}
		i = SkipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
}

// valueEnd returns the end of the valid JSON value starting at obj[i].
func valueEnd(obj []byte, i int) int {
	depth := 0
	for j := i; j < len(obj); j++ {
		switch obj[j] {
		case '"':
			j = StringEnd(obj, j)
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j // the end of a scalar before the object closes
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	return len(obj)
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (space, tab, line feed, carriage return), or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
