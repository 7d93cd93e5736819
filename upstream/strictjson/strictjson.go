// Package strictjson finds, in one pass, what lets two JSON decoders read
// the same valid text differently: a member name repeated in one object
// (exactly, or only after the case folding some decoder applies), nesting
// deeper than a bound, and numbers beyond float64's range.
//
// It is hand-written because no maintained library reports case-folded
// duplicates, and because the walk it replaces, over encoding/json's
// Decoder.Token, allocated for every token and was the largest cost of the
// gateway's own code per call (docs/performance.md). Callers first check
// the text with json.Valid (and, where they need them, utf8.Valid and
// LoneSurrogate, which json.Valid does not refuse); Check relies on that and reads only string bounds, brackets,
// commas and numbers: in an object the string right after '{' or ',' is a
// member name.
//
// Every layer uses it (the middleware's peek, the handlers' argument
// decoding and the upstream clients' answers), so it is a leaf under
// upstream/, the layer every other imports.
package strictjson

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Problem says why a text was refused.
type Problem int

const (
	// OK: nothing found.
	OK Problem = iota
	// TooDeep: more than Options.MaxDepth objects and arrays nest.
	TooDeep
	// Repeated: one object holds the same member name twice.
	Repeated
	// RepeatedFolded: one object holds two names equal under Options.Fold.
	RepeatedFolded
	// NumberRange: a number is beyond float64's range.
	NumberRange
)

// Options says what Check refuses.
type Options struct {
	// MaxDepth bounds the nesting of objects and arrays.
	MaxDepth int
	// Fold maps an (unescaped) member name to the form under which two
	// names collide, e.g. strings.ToLower.
	Fold func(name string) string
	// FoldASCII is Fold for one byte of a name that is plain ASCII
	// without escapes; it must agree with Fold on such names, which are
	// then folded in place without allocating.
	FoldASCII func(b byte) byte
	// FloatRange refuses numbers beyond float64's range, which decoders
	// that read numbers as doubles turn into infinities or errors.
	FloatRange bool
}

// Check reads doc, which json.Valid accepted, and returns the first
// problem found and, for a repeated member, its name.
func Check(doc []byte, o *Options) (Problem, string) {
	type frame struct {
		object bool
		key    bool // the next string in this object is a member name
		names  map[string]int
	}
	var (
		stack = make([]frame, 0, 8)
		// Objects at one depth never overlap, so their name sets
		// (folded name → offset of its first raw name) are reused.
		sets []map[string]int
		fold []byte
	)
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; c {
		case '{', '[':
			if len(stack) >= o.MaxDepth {
				return TooDeep, ""
			}
			f := frame{object: c == '{', key: c == '{'}
			if f.object {
				d := len(stack)
				for len(sets) <= d {
					sets = append(sets, nil)
				}
				if sets[d] == nil {
					sets[d] = map[string]int{}
				}
				clear(sets[d])
				f.names = sets[d]
			}
			stack = append(stack, f)
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].key = true
			}
		case '"':
			end := stringEnd(doc, i)
			if n := len(stack); n > 0 && stack[n-1].key {
				top := &stack[n-1]
				top.key = false
				var ok bool
				if fold, ok = foldPlain(fold[:0], doc[i+1:end], o.FoldASCII); !ok {
					fold = append(fold[:0], o.Fold(unquote(doc[i:end+1]))...)
				}
				if first, seen := top.names[string(fold)]; seen {
					return repeated(doc, first, i)
				}
				top.names[string(fold)] = i
			}
			i = end
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end := i + 1
			for end < len(doc) && isNumberByte(doc[end]) {
				end++
			}
			if o.FloatRange && !fitsFloat64(doc[i:end]) {
				return NumberRange, ""
			}
			i = end - 1
		}
	}
	return OK, ""
}

// repeated tells an exact repeat from a folded one, given the offsets of
// the two names' opening quotes.
func repeated(doc []byte, first, second int) (Problem, string) {
	a := unquote(doc[first : stringEnd(doc, first)+1])
	b := unquote(doc[second : stringEnd(doc, second)+1])
	if a == b {
		return Repeated, a
	}
	return RepeatedFolded, b
}

// unquote decodes one JSON string literal of valid JSON text.
func unquote(lit []byte) string {
	var s string
	_ = json.Unmarshal(lit, &s) // valid JSON: cannot fail
	return s
}

// foldPlain appends the folded form of a name that is plain ASCII without
// escapes; ok is false for any other name.
func foldPlain(dst, raw []byte, foldASCII func(byte) byte) ([]byte, bool) {
	for _, b := range raw {
		if b == '\\' || b >= 0x80 {
			return dst, false
		}
		dst = append(dst, foldASCII(b))
	}
	return dst, true
}

// stringEnd returns the index of the quote closing the JSON string that
// opens at doc[open]; the text is valid JSON, so there is one.
func stringEnd(doc []byte, open int) int {
	for j := open + 1; ; {
		k := bytes.IndexAny(doc[j:], `"\`)
		if doc[j+k] == '"' {
			return j + k
		}
		j += k + 2 // a backslash and the character it escapes
	}
}

func isNumberByte(b byte) bool {
	return '0' <= b && b <= '9' || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-'
}

// fitsFloat64 reports whether a JSON number is within float64's range.
// Short integers, the IDs and counts of real answers, are without parsing.
func fitsFloat64(num []byte) bool {
	if len(num) <= 15 && !bytes.ContainsAny(num, ".eE") {
		return true
	}
	_, err := strconv.ParseFloat(string(num), 64)
	return err == nil
}

// ASCIILower is Options.FoldASCII for a Fold of strings.ToLower: it lowers
// A-Z and leaves every other byte.
func ASCIILower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
