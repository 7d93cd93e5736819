package toolset

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// EncodeJSON serialises a tool result compactly and without HTML escaping
// ("<" stays "<"), the one encoding every result uses; page fitting measures
// results with it.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeTo(&b, v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// resultText is a tool result as the text of its content block. A
// json.RawMessage result was encoded by the tool itself with EncodeJSON
// (a diff page, whose fitter measured exactly those bytes) and is taken as
// it is: encoding it again would only run encoding/json's compaction over
// up to a page of text. Anything else is encoded into the string directly,
// saving the copy from bytes to string.
func resultText(v any) (string, error) {
	if raw, ok := v.(json.RawMessage); ok && len(raw) > 0 {
		return string(raw), nil
	}
	var b strings.Builder
	if err := encodeTo(&b, v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func encodeTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
