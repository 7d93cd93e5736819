package args

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

var intLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// Decode decodes raw tool arguments into a T, or refuses them with an
// invalid_arguments error that names the member at fault.
func Decode[T any](raw json.RawMessage) (T, error) {
	var out T
	err := decodeInto(raw, reflect.ValueOf(&out).Elem())
	return out, err
}

func decodeInto(raw json.RawMessage, dst reflect.Value) error {
	s := specFor(dst.Type())
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if !utf8.Valid(raw) {
		return refuse("", "arguments are not valid UTF-8")
	}
	// Valid objects, every well-formed call, take one pass over the bytes
	// (members); anything else the token walk, which names the fault.
	if raw[0] != '{' || !json.Valid(raw) {
		return walkTokens(raw, s, dst)
	}
	seen := make(map[string]bool, len(s.fields))
	var err error
	strictjson.Members(raw, func(name string, value json.RawMessage) bool {
		err = s.member(dst, seen, name, value)
		return err == nil
	})
	if err != nil {
		return err
	}
	return s.required(seen)
}

// member takes one member of the arguments object, in the order given.
func (s *spec) member(dst reflect.Value, seen map[string]bool, name string, value json.RawMessage) error {
	if seen[name] {
		return refuse(name, "member %q appears more than once", name)
	}
	seen[name] = true
	f, ok := s.byName[name]
	if !ok {
		return refuse(name, "unknown member %q", name)
	}
	return f.set(dst.FieldByIndex(f.index), value)
}

// required refuses the first required member not seen.
func (s *spec) required(seen map[string]bool) error {
	for _, f := range s.fields {
		if f.required && !seen[f.name] {
			return refuse(f.name, "member %q is required", f.name)
		}
	}
	return nil
}

// walkTokens reads the arguments with encoding/json's tokens: the path for
// text that is not a valid object, where it names the fault (not an
// object, invalid JSON, trailing data), and the reference the one-pass
// reading is tested against.
func walkTokens(raw json.RawMessage, s *spec, dst reflect.Value) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return refuse("", "arguments must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return refuse("", "arguments are not valid JSON")
		}
		name := tok.(string)
		if seen[name] {
			return refuse(name, "member %q appears more than once", name)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			seen[name] = true
			return refuse(name, "member %q is not valid JSON", name)
		}
		if err := s.member(dst, seen, name, value); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return refuse("", "arguments are not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return refuse("", "trailing data after the arguments object")
	}
	return s.required(seen)
}

func (f *field) set(dst reflect.Value, value json.RawMessage) error {
	if string(value) == "null" {
		return refuse(f.name, "%q must not be null", f.name)
	}
	var v reflect.Value
	switch f.kind {
	case kindInt:
		n, err := f.int(value)
		if err != nil {
			return err
		}
		v = reflect.ValueOf(n)
	case kindString:
		str, err := f.string(value)
		if err != nil {
			return err
		}
		v = reflect.ValueOf(str)
	case kindBool:
		var b bool
		if string(value) != "true" && string(value) != "false" {
			return refuse(f.name, "%q must be a boolean", f.name)
		}
		b = string(value) == "true"
		v = reflect.ValueOf(b)
	}
	if f.optional {
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		v = p
	}
	dst.Set(v)
	return nil
}

func (f *field) int(value json.RawMessage) (int64, error) {
	what := "an integer"
	if f.hasMin && f.min == 1 {
		what = "a positive integer"
	} else if f.hasMin && f.min == 0 {
		what = "a non-negative integer"
	}
	if !intLiteral.Match(value) {
		return 0, refuse(f.name, "%q must be %s (a JSON integer, not a string, float or boolean)", f.name, what)
	}
	n, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return 0, refuse(f.name, "%q must be %s within the signed 64-bit range", f.name, what)
	}
	if (f.hasMin && n < f.min) || n > f.max {
		return 0, refuse(f.name, "%q must be %s in [%d, %d]", f.name, what, f.min, f.max)
	}
	return n, nil
}

func (f *field) string(value json.RawMessage) (string, error) {
	if len(value) == 0 || value[0] != '"' {
		return "", refuse(f.name, "%q must be a string", f.name)
	}
	if strictjson.LoneSurrogate(value) {
		return "", refuse(f.name, "%q is not valid UTF-8 (lone surrogate escape)", f.name)
	}
	var s string
	if err := json.Unmarshal(value, &s); err != nil {
		return "", refuse(f.name, "%q must be a string", f.name)
	}
	switch {
	case f.maxLen > 0 && utf8.RuneCountInString(s) > f.maxLen:
		return "", refuse(f.name, "%q is longer than %d characters", f.name, f.maxLen)
	case f.enum != nil && !slices.Contains(f.enum, s):
		return "", refuse(f.name, "%q must be one of %v", f.name, f.enum)
	case f.pattern != nil && !f.pattern.MatchString(s):
		return "", refuse(f.name, "%q does not match the pattern %s", f.name, f.pattern)
	}
	return s, nil
}

func refuse(member, format string, a ...any) *toolerr.Error {
	e := toolerr.New(toolerr.InvalidArguments, format, a...)
	if member != "" {
		e = e.With("argument", member)
	}
	return e
}
