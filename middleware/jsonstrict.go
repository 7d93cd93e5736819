package middleware

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
)

// requestStrictness is what checkStrict refuses: names compare under
// foldName, the widest folding any reader of the request might apply.
// Numbers are left alone: the SDK keeps them as raw JSON.
var requestStrictness = strictjson.Options{
	MaxDepth:  MaxJSONDepth,
	Fold:      foldName,
	FoldASCII: strictjson.ASCIITable(asciiFold),
}

// checkStrict reads a valid JSON document and returns a reason when an
// object repeats a member, when two members of any object differ only by
// letter case (encoding/json would match them case-insensitively, the SDK
// would not), or when nesting exceeds MaxJSONDepth.
func checkStrict(doc []byte) string {
	switch p, name := strictjson.Check(doc, &requestStrictness); p {
	case strictjson.OK:
		return ""
	case strictjson.TooDeep:
		return "JSON nesting too deep"
	case strictjson.Repeated:
		return "member " + quote(name) + " appears more than once"
	default:
		return "members differing only by case are not allowed"
	}
}

// asciiFold is foldName for one byte of a plain ASCII name: the smallest
// rune of a letter's fold orbit is its upper-case form ('k' and 's' too:
// the Kelvin sign and long s are larger).
func asciiFold(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
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
