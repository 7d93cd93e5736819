package evidence

import "encoding/json"

// manifestOf writes every metadata member in entityShape order, compact,
// with each value exactly as received.
func manifestOf(v map[string]value) json.RawMessage {
	n := 0
	for _, x := range v {
		n += len(x.raw) + 24
	}
	return appendObject(make([]byte, 0, n+256), entityShape, "", v)
}

func appendObject(b []byte, s shape, prefix string, v map[string]value) []byte {
	b = append(b, '{')
	for i, f := range s {
		if i > 0 {
			b = append(b, ',')
		}
		path := f.name
		if prefix != "" {
			path = prefix + "." + f.name
		}
		b = append(b, '"')
		b = append(b, f.name...) // fixed names: plain ASCII, nothing to escape
		b = append(b, '"', ':')
		if f.kind == kindObject {
			b = appendObject(b, f.shape, path, v)
		} else {
			b = append(b, v[path].raw...)
		}
	}
	return append(b, '}')
}
