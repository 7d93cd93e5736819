package diffread

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
)

// member is one member of an object whose members the contract fixes.
type member = evidence.Member

func str(name string) member         { return member{Name: name, Type: "string"} }
func nullableStr(name string) member { return member{Name: name, Type: "string", Nullable: true} }
func num(name string) member         { return member{Name: name, Type: "number"} }
func boolean(name string) member     { return member{Name: name, Type: "boolean"} }

// pageShape is a page's members (docs/tools.md, diffpage.Page): the page,
// requested and the manifest are closed — every member present, no other
// allowed, at every level — so that a member spelled in another case, or
// one the reader would skip, cannot carry a value another JSON reader of
// the same text takes instead. The manifest's members are the evidence
// verifier's own shape, the one the gateway writes.
var pageShape = []member{
	{Name: "requested", Type: "object", Members: []member{str("owner"), str("repo"), num("index")}},
	{Name: "manifest", Type: "object", Members: evidence.ManifestMembers()},
	str("contract"),
	boolean("atomic_latest_pr_snapshot"),
	num("byte_offset"),
	num("chunk_bytes"),
	str("encoding"),
	str("data"),
	str("chunk_sha256"),
	nullableStr("text"),
	boolean("whole_diff_verified"),
	boolean("eof"),
	num("next_byte_offset"),
	nullableStr("next_cursor"),
}

// manifestShape is the manifest's own members (pageShape's).
var manifestShape = pageShape[1].Members

// maxPageDepth bounds the nesting strictjson walks; a page nests four
// levels (page, manifest, observations, target_tip).
const maxPageDepth = 8

// maxSafeInteger is the largest integer every JSON reader reads exactly
// (2^53-1): readers that hold numbers as doubles, jq and JavaScript among
// them, round larger ones.
const maxSafeInteger = 1<<53 - 1

// pageStrictness is what checkText refuses with strictjson: a member
// repeated in one object, exactly or in another letter case (decoders keep
// the first, the last, or match names without regard to case), and nesting
// deeper than a page's.
var pageStrictness = strictjson.Options{
	MaxDepth:  maxPageDepth,
	Fold:      strings.ToLower,
	FoldASCII: strictjson.ASCIITable(strictjson.ASCIILower),
}

var canonicalInteger = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// checkText refuses JSON text that two readers could read differently:
// invalid UTF-8, invalid JSON, a lone UTF-16 surrogate escape (decoders
// replace it), a repeated member, or nesting past maxPageDepth.
func checkText(text []byte) error {
	switch {
	case !utf8.Valid(text):
		return errors.New("not valid UTF-8")
	case !json.Valid(text):
		return errors.New("not valid JSON")
	case strictjson.LoneSurrogate(text):
		return errors.New("a lone UTF-16 surrogate escape")
	}
	switch p, name := strictjson.Check(text, &pageStrictness); p {
	case strictjson.OK:
		return nil
	case strictjson.TooDeep:
		return fmt.Errorf("nested deeper than %d levels", maxPageDepth)
	case strictjson.Repeated:
		return fmt.Errorf("member %s appears twice in one object", quote(name))
	default:
		return fmt.Errorf("member %s repeats another in a different letter case", quote(name))
	}
}

// checkClosed checks that raw, text checkText accepted, is an object of
// exactly shape's members, each of its type, objects recursively; every
// number is a non-negative integer without sign, fraction, exponent or
// leading zero, at most maxSafeInteger. path is the object's dotted member
// path ("" for the page itself, "manifest.content"), for errors.
func checkClosed(raw json.RawMessage, shape []member, path string) error {
	object := path
	if object == "" {
		object = "the page"
	}
	var members map[string]json.RawMessage // exact names: no case folding
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &members) != nil {
		return fmt.Errorf("%s is not a JSON object", object)
	}
	for name := range members {
		if !slices.ContainsFunc(shape, func(m member) bool { return m.Name == name }) {
			return fmt.Errorf("%s has an unknown member %s", object, quote(name))
		}
	}
	for _, m := range shape {
		at := m.Name
		if path != "" {
			at = path + "." + m.Name
		}
		v, ok := members[m.Name]
		if !ok {
			return fmt.Errorf("%s has no member %q", object, m.Name)
		}
		if string(v) == "null" && m.Nullable {
			continue
		}
		if err := checkValue(v, m, at); err != nil {
			return err
		}
	}
	return nil
}

// checkValue checks one member's value against its type.
func checkValue(v json.RawMessage, m member, at string) error {
	var ok bool
	switch m.Type {
	case "object":
		return checkClosed(v, m.Members, at)
	case "string":
		ok = v[0] == '"'
	case "boolean":
		ok = string(v) == "true" || string(v) == "false"
	case "number":
		n, err := strconv.ParseInt(string(v), 10, 64)
		if !canonicalInteger.Match(v) || err != nil || n > maxSafeInteger {
			return fmt.Errorf("%s must be an integer from 0 to 2^53-1, written plainly", at)
		}
		ok = true
	}
	if !ok && m.Nullable {
		return fmt.Errorf("%s must be a %s or null", at, m.Type)
	}
	if !ok {
		return fmt.Errorf("%s must be a %s", at, m.Type)
	}
	return nil
}

// quote renders a member name from the endpoint for an error, clipped.
func quote(name string) string { return strconv.Quote(clip(name)) }
