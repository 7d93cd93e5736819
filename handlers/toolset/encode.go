package toolset

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// JSONAppender is a result that writes its own encoding: exactly the bytes
// EncodeJSON's encoding/json would write for it, without reflection.
// A result whose text is large and mostly escaping (a document fragment)
// offers it; the type's own differential test and fuzz target hold it to
// encoding/json, since nothing here can.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// JSONStringAppender is a JSONAppender that also writes its encoding as
// a JSON string: exactly jsonwire.AppendString(dst, string(AppendJSON(nil))),
// in one pass and without building the encoding first. The owned
// tools/call path writes it straight into its answer's text block
// (writeOwned), where the text would otherwise be built, copied into a
// string and escaped again: most of the cost of answering a 64 KiB
// document fragment. As for AppendJSON, the type's own tests hold it to
// that composition.
type JSONStringAppender interface {
	JSONAppender
	AppendJSONString(dst []byte) []byte
}

// answer is a call's successful result on its way out: its text, or, on
// the owned path, the result that writes that text itself (fused) while
// nothing has built it.
type answer struct {
	text  string
	fused JSONStringAppender
}

// Text is the answer's text, built from the fused result when it was not
// (the audit record of a result no evidence identifies).
func (a answer) Text() string {
	if a.fused == nil {
		return a.text
	}
	text, _ := resultText(a.fused) // a JSONAppender's text cannot fail
	return text
}

// EncodeJSON serialises a tool result compactly and without HTML escaping
// ("<" stays "<"), the one encoding every result uses; page fitting measures
// results with it.
func EncodeJSON(v any) ([]byte, error) {
	if a, ok := v.(JSONAppender); ok {
		return a.AppendJSON(nil), nil
	}
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
// up to a page of text. A JSONAppender writes itself into a pooled buffer,
// copied once into the string. Anything else is encoded into the string
// directly, saving the copy from bytes to string.
func resultText(v any) (string, error) {
	if raw, ok := v.(json.RawMessage); ok && len(raw) > 0 {
		return string(raw), nil
	}
	if a, ok := v.(JSONAppender); ok {
		p := textBuf.Get().(*[]byte)
		b := a.AppendJSON((*p)[:0])
		text := string(b)
		if cap(b) <= maxPooledAnswer {
			*p = b
			textBuf.Put(p)
		}
		return text, nil
	}
	var b strings.Builder
	if err := encodeTo(&b, v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// textBuf holds results being encoded by their JSONAppender, as outBuf
// holds answers.
var textBuf = sync.Pool{New: func() any { return new([]byte) }}

func encodeTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
