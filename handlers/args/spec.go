// Package args decodes MCP tool arguments strictly and derives each tool's
// JSON Schema from the same Go struct, so the schema a client sees and the
// rules the gateway enforces cannot drift apart.
//
// A tool's argument struct declares its members with tags:
//
//	json:"owner"            member name
//	arg:"required"          must be present (only non-pointer fields may be required)
//	min:"1" max:"…"         integer bounds (max defaults to the int64 maximum)
//	pattern:"^…$"           string pattern (RE2, anchored by the author)
//	enum:"a,b,c"            allowed string values
//	maxlen:"N"              maximum string length in characters (code points), as JSON Schema counts
//	desc:"…"                description shown to the model
//
// Supported field types are string, int64 and bool, and pointers to them for
// optional members. An embedded struct (untagged, not a pointer) lends its
// members in its place, in order, so that members several tools share (a
// repository reference) are declared once; a member name given twice, an
// embedded pointer, a tagged embed or an embedded non-struct panics at
// first use, like a bad tag, and so does an exported field without a json
// tag (json:"-" keeps a field out on purpose). The rules: arguments are one JSON object of valid UTF-8;
// no member may repeat or be unknown; null is never a value; integers are
// plain JSON integer literals within int64 (no fraction, exponent, string or
// boolean); strings carry no lone surrogate escapes.
package args

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

type kind int

const (
	kindString kind = iota + 1
	kindInt
	kindBool
)

type field struct {
	name     string
	index    []int // reflect.Value.FieldByIndex path, through embedded structs
	kind     kind
	optional bool // pointer field
	required bool
	min, max int64
	hasMin   bool
	pattern  *regexp.Regexp
	enum     []string
	maxLen   int
	desc     string
}

type spec struct {
	fields []field
	byName map[string]*field
}

var specs sync.Map // reflect.Type → *spec

// specFor parses and caches the tags of struct type t. Malformed tags are a
// programming error and panic at first use (tests exercise every tool).
func specFor(t reflect.Type) *spec {
	if s, ok := specs.Load(t); ok {
		return s.(*spec)
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("args: %v is not a struct", t))
	}
	s := &spec{byName: map[string]*field{}}
	s.add(t, t, nil)
	for i := range s.fields {
		f := &s.fields[i]
		if _, dup := s.byName[f.name]; dup {
			panic(fmt.Sprintf("args: %v: member %q is declared twice (check its embedded structs)", t, f.name))
		}
		s.byName[f.name] = f
	}
	actual, _ := specs.LoadOrStore(t, s)
	return actual.(*spec)
}

// add appends the members of struct type t, found at path within the
// argument type top, flattening embedded structs in their place.
func (s *spec) add(top, t reflect.Type, path []int) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		index := append(slices.Clone(path), i)
		if sf.Anonymous {
			s.addEmbedded(top, sf, index)
			continue
		}
		name := strings.Split(sf.Tag.Get("json"), ",")[0]
		switch {
		case name == "-" || !sf.IsExported():
			continue // declared out of the arguments, or invisible to JSON
		case name == "":
			// encoding/json would give it a member named after the Go
			// field; args would not, so a client's value for it would be
			// refused as unknown while the author thinks it is read.
			panic(fmt.Sprintf("args: %v.%s is exported without a json tag; name its member or tag it json:\"-\"", top, sf.Name))
		}
		s.fields = append(s.fields, parseField(top, sf, name, index))
	}
}

// addEmbedded flattens one embedded field, or panics at what args cannot
// flatten: a pointer (nil until set, so a decoded member would have no
// home), a tag (it would name a nested object, which arguments never
// are) or anything but a struct.
func (s *spec) addEmbedded(top reflect.Type, sf reflect.StructField, index []int) {
	switch {
	case sf.Type.Kind() == reflect.Pointer:
		panic(fmt.Sprintf("args: %v embeds the pointer %v; embed the struct itself", top, sf.Type))
	case sf.Tag != "":
		panic(fmt.Sprintf("args: %v embeds %v with tags; an embed lends its members and takes none", top, sf.Type))
	case sf.Type.Kind() != reflect.Struct:
		panic(fmt.Sprintf("args: %v embeds %v, which is not a struct", top, sf.Type))
	}
	s.add(top, sf.Type, index)
}

// parseField reads one member's tags; t is the argument type, for messages.
func parseField(t reflect.Type, sf reflect.StructField, name string, index []int) field {
	f := field{name: name, index: index, max: math.MaxInt64, desc: sf.Tag.Get("desc")}
	ft := sf.Type
	if ft.Kind() == reflect.Pointer {
		f.optional = true
		ft = ft.Elem()
	}
	switch ft.Kind() {
	case reflect.String:
		f.kind = kindString
	case reflect.Int64:
		f.kind = kindInt
	case reflect.Bool:
		f.kind = kindBool
	default:
		panic(fmt.Sprintf("args: %v.%s has unsupported type %v", t, sf.Name, sf.Type))
	}
	f.required = sf.Tag.Get("arg") == "required"
	if f.required == f.optional {
		panic(fmt.Sprintf("args: %v.%s: required members are plain fields, optional ones pointers", t, sf.Name))
	}
	if v := sf.Tag.Get("min"); v != "" {
		f.min, f.hasMin = mustInt(t, sf, v), true
	}
	if v := sf.Tag.Get("max"); v != "" {
		f.max = mustInt(t, sf, v)
	}
	if v := sf.Tag.Get("pattern"); v != "" {
		f.pattern = regexp.MustCompile(v)
	}
	if v := sf.Tag.Get("enum"); v != "" {
		f.enum = strings.Split(v, ",")
	}
	if v := sf.Tag.Get("maxlen"); v != "" {
		f.maxLen = int(mustInt(t, sf, v))
	}
	return f
}

func mustInt(t reflect.Type, sf reflect.StructField, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("args: %v.%s: bad integer tag %q", t, sf.Name, v))
	}
	return n
}
