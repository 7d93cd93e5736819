package middleware

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// checkStrict walks a valid JSON document and returns a reason when an
// object repeats a member, when two members of any object differ only by
// letter case (encoding/json would match them case-insensitively, the SDK
// would not), or when nesting exceeds MaxJSONDepth.
func checkStrict(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		folded map[string]bool
		expect bool // next string token in an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.expect {
			if top.keys[s] {
				return "member " + quote(s) + " appears more than once"
			}
			if f := foldName(s); top.folded[f] {
				return "members differing only by case are not allowed"
			} else {
				top.folded[f] = true
			}
			top.keys[s] = true
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxJSONDepth {
				return "JSON nesting too deep"
			}
			if top != nil && top.object {
				top.expect = true
			}
			obj := tok == json.Delim('{')
			stack = append(stack, &frame{object: obj, keys: map[string]bool{}, folded: map[string]bool{}, expect: obj})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
			}
			continue
		}
		if top != nil && top.object {
			top.expect = true
		}
	}
}

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// foldName folds a member name so that two names collide when
// strings.EqualFold, encoding/json's case-insensitive field matching
// (which folds "ſ" to "s" and the Kelvin sign to "k") or strings.ToLower
// would equate them.
func foldName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		// The smallest rune of r's Unicode simple-fold orbit, as encoding/json does.
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
