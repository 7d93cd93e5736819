package toolset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// frameReader is what the SDK's stdio transport reads. That transport
// decodes a stream of JSON values, not lines: one value may span lines and
// one line may hold two values, so a reader that judged lines one by one
// and passed the rest on could be shown a different message than the SDK
// parses (a request split over two lines carried a client's own
// stdioIDKey). So the framing is decided here, once: every line must be
// exactly one JSON object, and what reaches the SDK is that object
// re-encoded on one line, with the id rule applied; any other line is
// answered with a JSON-RPC error (id null) and dropped, and the session
// goes on. Blank lines are skipped.
type frameReader struct {
	br     *bufio.Reader
	refuse io.Writer // the session's output, for the refusals
	out    []byte    // the current line, re-encoded, still to be read
	err    error
	// pending, when set, counts each request passed on, and the end of
	// the input reaches the SDK only once every one is answered (see
	// pendingAnswers).
	pending *pendingAnswers
}

func newFrameReader(r io.Reader, refuse io.Writer) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(r, 64<<10), refuse: refuse}
}

func (r *frameReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			if r.err == io.EOF && r.pending != nil {
				r.pending.wait()
			}
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// next reads one line and sets out to what the SDK may read of it, or
// answers its refusal.
func (r *frameReader) next() {
	line, tooLong, err := r.line()
	r.err = err
	var refusal *toolerr.Error
	var request bool
	if tooLong {
		refusal = toolerr.New(toolerr.BodyTooLarge, "a line over %d bytes", maxStdioLine)
	} else {
		r.out, request, refusal = frame(line)
	}
	if refusal == nil {
		if request && r.pending != nil {
			r.pending.add()
		}
		return
	}
	if _, err := r.refuse.Write(refusalLine(refusal)); err != nil {
		r.err = err
	}
}

// line reads up to and including the next newline (or to the end of the
// input), holding at most maxStdioLine bytes of it; a longer line is read
// to its end and reported, not returned.
func (r *frameReader) line() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			// The terminator ("\r\n" at most) is not part of the bound.
			if len(bytes.TrimRight(line, "\r\n")) > maxStdioLine {
				line, tooLong = nil, true
			}
		}
		if err != bufio.ErrBufferFull {
			return line, tooLong, err
		}
	}
}

// jsonSpace is the whitespace JSON allows between tokens.
const jsonSpace = " \t\r\n"

// frame returns the one-line message the SDK may read for line, nil for a
// blank line, or why line is refused; request reports whether the message
// is a request (a method and a non-null id), which the SDK answers.
func frame(line []byte) (msg []byte, request bool, refusal *toolerr.Error) {
	body := bytes.Trim(line, jsonSpace)
	switch {
	case len(body) == 0:
		return nil, false, nil
	case !json.Valid(body):
		return nil, false, toolerr.New(toolerr.ParseError, "a line must hold one complete JSON-RPC message: this one is not one JSON text (a message split over lines, or two on one line?)")
	case !utf8.Valid(body):
		// JSON is UTF-8 (RFC 8259 §8.1); decoders differ on what they make
		// of other bytes, and the SDK's is not this one.
		return nil, false, toolerr.New(toolerr.ParseError, "a line must be UTF-8")
	case body[0] != '{':
		return nil, false, toolerr.New(toolerr.InvalidRequest, "a line must hold one JSON-RPC message, a JSON object (batches are not supported)")
	}
	msg, request, err := withID(body)
	if err != nil {
		return nil, false, toolerr.Wrap(err, toolerr.InvalidRequest, "the message could not be read")
	}
	return msg, request, nil
}

// refusalLine is the JSON-RPC error answering a refused line, shaped as
// the HTTP chain's refusals (middleware.Refuse) with the id null: a line
// that is not one message has no id to echo (JSON-RPC 2.0 §5).
func refusalLine(e *toolerr.Error) []byte {
	line, err := encodeLine(e.RPCError(nil))
	if err != nil { // a map of strings and ints always encodes
		panic(err)
	}
	return line
}

// withID re-encodes one message (a valid JSON object) on one line: it
// removes stdioIDKey from its params._meta, and for a request (a method
// and a non-null id) sets it to the id exactly as sent (a JSON text in a
// string, so large numbers and escapes survive). Repeated members of the
// message, its params and their _meta collapse to the last one, as the SDK
// reads them, so the SDK sees exactly the members judged here. request
// reports whether the message is a request.
func withID(msg []byte) (line []byte, request bool, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, false, err
	}
	id := m["id"]
	_, isCall := m["method"]
	request = isCall && id != nil && string(id) != "null"
	if params, err := paramsWithID(m["params"], id, request); err != nil {
		return nil, false, err
	} else if params != nil {
		m["params"] = params
	}
	line, err = encodeLine(m)
	return line, request, err
}

// paramsWithID returns params with stdioIDKey removed from its _meta and,
// for a request, set to id; nil when params is not an object with an
// object (or no) _meta, which leaves nothing to change: the SDK refuses
// such params or reads no _meta from them.
func paramsWithID(params, id json.RawMessage, request bool) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return nil, nil
	}
	var meta map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return nil, nil
	}
	_, had := meta[stdioIDKey]
	delete(meta, stdioIDKey)
	if request {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		quoted, err := compactJSON(string(id))
		if err != nil {
			return nil, err
		}
		meta[stdioIDKey] = quoted
	}
	if !request && !had {
		return nil, nil
	}
	var err error
	if p["_meta"], err = compactJSON(meta); err != nil {
		return nil, err
	}
	return compactJSON(p)
}

// encodeLine encodes v as compactJSON followed by a newline: compact JSON
// holds no raw newline, so the line is exactly one frame for the SDK.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// compactJSON encodes v compactly and without HTML escaping, which would
// grow a line up to six times ("<" becomes "\u003c").
func compactJSON(v any) (json.RawMessage, error) {
	line, err := encodeLine(v)
	return bytes.TrimSuffix(line, []byte("\n")), err
}
