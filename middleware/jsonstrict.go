package middleware

import (
	"bytes"
	"encoding/json"
	"strings"
)

// checkStrict walks a valid JSON document and returns a reason when an
// object repeats a member, when two members of the envelope or params
// differ only by letter case (encoding/json would match them
// case-insensitively), or when nesting exceeds MaxJSONDepth.
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
			if f := strings.ToLower(s); top.folded[f] {
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
