package args

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/golden"
)

func TestSchemaGolden(t *testing.T) {
	b, err := json.MarshalIndent(Schema[testArgs](), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/testargs.schema.json", append(b, '\n'))
}

// TestSchemaMembers checks the schema against the struct by reflection:
// exactly the struct's tagged members, required exactly the required ones,
// and each bound written exactly.
func TestSchemaMembers(t *testing.T) {
	raw, _ := json.Marshal(Schema[testArgs]())
	var s struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("schema %s: %v", raw, err)
	}
	if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Fatalf("schema %s is not a closed object", raw)
	}
	var members, required []string
	rt := reflect.TypeFor[testArgs]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		members = append(members, name)
		if f.Tag.Get("arg") == "required" {
			required = append(required, name)
		}
	}
	var props []string
	for k := range s.Properties {
		props = append(props, k)
	}
	sort.Strings(props)
	sort.Strings(members)
	if !slices.Equal(props, members) {
		t.Fatalf("properties %v, struct members %v", props, members)
	}
	if !slices.Equal(s.Required, required) {
		t.Fatalf("required %v, want %v in struct order", s.Required, required)
	}

	cases := []struct {
		member string
		want   string
	}{
		{"count", `{"description":"A positive count.","maximum":9223372036854775807,"minimum":1,"type":"integer"}`},
		{"delta", `{"description":"Any signed 64-bit integer.","maximum":9223372036854775807,"minimum":-9223372036854775808,"type":"integer"}`},
		{"level", `{"maximum":10,"minimum":0,"type":"integer"}`},
		{"name", `{"description":"A short name.","maxLength":5,"type":"string"}`},
		{"flag", `{"type":"boolean"}`},
		{"strict", `{"type":"boolean"}`},
		{"state", `{"enum":["open","closed","all"],"type":"string"}`},
		{"owner", `{"pattern":"^[a-z]{1,8}$","type":"string"}`},
	}
	for _, tc := range cases {
		t.Run(tc.member, func(t *testing.T) {
			if got := string(s.Properties[tc.member]); got != tc.want {
				t.Fatalf("%s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestSchemaAgreesWithDecode: each integer bound the schema states is the
// one Decode enforces.
func TestSchemaAgreesWithDecode(t *testing.T) {
	props := Schema[testArgs]()["properties"].(map[string]any)
	for _, member := range []string{"delta", "level"} {
		p := props[member].(map[string]any)
		if maxN, ok := p["maximum"].(json.Number); ok {
			if _, err := Decode[testArgs](json.RawMessage(obj(`"` + member + `":` + string(maxN)))); err != nil {
				t.Errorf("%s: the schema's maximum %s is refused: %v", member, maxN, err)
			}
		}
		if minN, ok := p["minimum"].(json.Number); ok {
			if _, err := Decode[testArgs](json.RawMessage(obj(`"` + member + `":` + string(minN)))); err != nil {
				t.Errorf("%s: the schema's minimum %s is refused: %v", member, minN, err)
			}
			below, err := strconv.ParseInt(string(minN), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if below == math.MinInt64 {
				continue // nothing below it is an int64; the range test covers the overflow
			}
			if _, err := Decode[testArgs](json.RawMessage(obj(`"` + member + `":` + strconv.FormatInt(below-1, 10)))); err == nil {
				t.Errorf("%s: %d below the schema's minimum is accepted", member, below-1)
			}
		}
	}
}
