package args

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// testArgs's members, in its order, lent by embedded structs: an
// unexported one, one nested in another, and an exported one. Decode and
// Schema must treat it exactly as testArgs.
type (
	nameCount struct {
		Name  string `json:"name" arg:"required" maxlen:"5" desc:"A short name."`
		Count int64  `json:"count" arg:"required" min:"1" desc:"A positive count."`
	}
	deltaLevel struct {
		Delta *int64 `json:"delta" desc:"Any signed 64-bit integer."`
		Level *int64 `json:"level" min:"0" max:"10"`
	}
	numbersFlag struct {
		deltaLevel
		Flag *bool `json:"flag"`
	}
	StateOwner struct {
		State *string `json:"state" enum:"open,closed,all"`
		Owner *string `json:"owner" pattern:"^[a-z]{1,8}$"`
	}
	embeddedArgs struct {
		nameCount
		numbersFlag
		Strict bool `json:"strict" arg:"required"`
		StateOwner
		Ignored string `json:"-"`
	}
)

// sameAsFlat decodes raw into testArgs and embeddedArgs and fails unless
// both give the same refusal, or the same members.
func sameAsFlat(t *testing.T, raw []byte) {
	t.Helper()
	flat, ferr := Decode[testArgs](raw)
	emb, eerr := Decode[embeddedArgs](raw)
	if fmt.Sprint(ferr) != fmt.Sprint(eerr) {
		t.Fatalf("%q: flat %v, embedded %v", raw, ferr, eerr)
	}
	if ferr != nil {
		if a, b := argumentOf(ferr), argumentOf(eerr); a != b {
			t.Fatalf("%q: the refusal names %q flat, %q embedded", raw, a, b)
		}
		return
	}
	fb, _ := json.Marshal(flat)
	eb, _ := json.Marshal(emb)
	if string(fb) != string(eb) {
		t.Fatalf("%q: flat %s, embedded %s", raw, fb, eb)
	}
}

func argumentOf(err error) any {
	if err == nil {
		return nil
	}
	return err.(interface{ Body() map[string]any }).Body()["error"].(map[string]any)["argument"]
}

func TestDecodeEmbedded(t *testing.T) {
	cases := []struct {
		name string
		raw  string
	}{
		{"every member", `{"name":"ab","count":2,"delta":-3,"level":4,"flag":true,"strict":true,"state":"open","owner":"acme"}`},
		{"members in another order", `{"owner":"acme","strict":false,"level":0,"count":1,"name":"x"}`},
		{"required only", obj()},
		{"the first required member missing is named in order", `{}`},
		{"a later required member missing", `{"name":"ab"}`},
		{"the required member after the embeds missing", `{"name":"ab","count":1}`},
		{"a nested embed's bound", obj(`"level":11`)},
		{"an exported embed's enum", obj(`"state":"merged"`)},
		{"an unexported embed's maxlen", `{"name":"abcdef","count":1,"strict":false}`},
		{"an embed's member twice", obj(`"delta":1`, `"delta":2`)},
		{"null in an embed", obj(`"flag":null`)},
		{"unknown member", obj(`"deltaLevel":{}`)},
		{"the embed's Go name is no member", obj(`"StateOwner":{"state":"open"}`)},
		{"invalid JSON", `{"name":"ab",`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { sameAsFlat(t, []byte(tc.raw)) })
	}

	a, err := Decode[embeddedArgs](json.RawMessage(`{"name":"ab","count":2,"delta":-3,"flag":true,"strict":true,"owner":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "ab" || a.Count != 2 || *a.Delta != -3 || a.Level != nil || !*a.Flag || !a.Strict || a.State != nil || *a.Owner != "acme" {
		t.Fatalf("members did not land in their embeds: %+v", a)
	}
}

func TestSchemaEmbedded(t *testing.T) {
	flat, emb := Schema[testArgs](), Schema[embeddedArgs]()
	if !reflect.DeepEqual(flat, emb) {
		fb, _ := json.Marshal(flat)
		eb, _ := json.Marshal(emb)
		t.Fatalf("flat %s\nembedded %s", fb, eb)
	}
	if got, want := emb["required"].([]string), []string{"name", "count", "strict"}; !slices.Equal(got, want) {
		t.Fatalf("required %v, want %v (field order through the embeds)", got, want)
	}
}

type (
	// WithOwner and AlsoOwner are exported so reflect.StructOf can embed
	// them.
	WithOwner struct {
		Owner string `json:"owner" arg:"required"`
	}
	AlsoOwner struct {
		Who string `json:"owner" arg:"required"`
	}
	withNumber struct {
		N int64 `json:"n" arg:"required"`
	}
	badMin struct {
		X int64 `json:"x" arg:"required" min:"one"`
	}
	plainName string
)

// structOf builds an argument type at run time: a member name repeated in
// source is what go vet's structtag check refuses, rightly, and what these
// cases need.
func structOf(fields ...reflect.StructField) func() {
	return func() { specFor(reflect.StructOf(fields)) }
}

func embedOf(t reflect.Type) reflect.StructField {
	return reflect.StructField{Name: t.Name(), Type: t, Anonymous: true}
}

func stringMember(goName, tag string) reflect.StructField {
	return reflect.StructField{Name: goName, Type: reflect.TypeFor[string](), Tag: reflect.StructTag(tag)}
}

func TestSpecPanicsOnBadEmbeds(t *testing.T) {
	cases := []struct {
		name string
		want string // in the panic's message
		f    func()
	}{
		{"one member name in two embeds", "declared twice",
			structOf(embedOf(reflect.TypeFor[WithOwner]()), embedOf(reflect.TypeFor[AlsoOwner]()))},
		{"an embed's member also declared outside it", "declared twice",
			structOf(embedOf(reflect.TypeFor[WithOwner]()), stringMember("Owner2", `json:"owner" arg:"required"`))},
		{"two fields with one name", "declared twice",
			structOf(stringMember("A", `json:"a" arg:"required"`), stringMember("B", `json:"a" arg:"required"`))},
		{"an embedded pointer", "embeds the pointer", func() {
			_, _ = Decode[struct {
				*withNumber
			}](nil)
		}},
		{"a tagged embed", "with tags", func() {
			_, _ = Decode[struct {
				withNumber `json:"inner"`
			}](nil)
		}},
		{"an embedded non-struct", "not a struct", func() {
			_, _ = Decode[struct {
				plainName
			}](nil)
		}},
		{"a bad tag inside an embed", "bad integer tag", func() {
			_, _ = Decode[struct {
				deltaLevel
				badMin
			}](nil)
		}},
		{"the schema of an embedded pointer", "embeds the pointer", func() {
			_ = Schema[struct {
				*withNumber
			}]()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want one saying %q", msg, tc.want)
				}
			}()
			tc.f()
		})
	}
}
