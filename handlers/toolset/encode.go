package toolset

import (
	"bytes"
	"encoding/json"
)

// EncodeJSON serialises a tool result compactly and without HTML escaping
// ("<" stays "<"), the one encoding every result uses; page fitting measures
// results with it.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
