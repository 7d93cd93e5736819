package args

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
)

// Schema returns the JSON Schema of T's arguments: an object with
// additionalProperties false, integer bounds, patterns and enums, exactly the
// rules Decode enforces. Integer bounds are json.Numbers so the int64
// maximum is written exactly.
func Schema[T any]() map[string]any {
	s := specFor(reflect.TypeFor[T]())
	props := map[string]any{}
	required := []string{}
	for _, f := range s.fields {
		p := map[string]any{}
		if f.desc != "" {
			p["description"] = f.desc
		}
		switch f.kind {
		case kindInt:
			p["type"] = "integer"
			// Without a min tag Decode still refuses anything below the
			// int64 minimum, so the schema says so too.
			lo := int64(math.MinInt64)
			if f.hasMin {
				lo = f.min
			}
			p["minimum"] = json.Number(strconv.FormatInt(lo, 10))
			p["maximum"] = json.Number(strconv.FormatInt(f.max, 10))
		case kindString:
			p["type"] = "string"
			if f.pattern != nil {
				p["pattern"] = f.pattern.String()
			}
			if f.enum != nil {
				p["enum"] = f.enum
			}
			if f.maxLen > 0 {
				p["maxLength"] = f.maxLen
			}
		case kindBool:
			p["type"] = "boolean"
		}
		props[f.name] = p
		if f.required {
			required = append(required, f.name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}
