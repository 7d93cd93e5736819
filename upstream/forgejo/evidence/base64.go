package evidence

import (
	"bytes"
	"encoding/base64"
)

// strict is standard base64 that refuses non-zero pad bits. The standard
// decoder still skips CR and LF and accepts padding inside a block; decode
// catches both by the decoded length (see decodeBlock).
var strict = base64.StdEncoding.Strict()

// parseData streams the "data" string through the input buffer: each buffer
// of base64 is decoded in one call, hashed, offered to the window and
// dropped. The opening quote is next in the input.
func (p *parser) parseData() error {
	in := &p.in
	if c, err := in.peek(); err != nil {
		return err
	} else if c != '"' {
		return malformed("%s must be a string", member(dataMember))
	}
	if _, err := in.next(); err != nil {
		return err
	}
	for {
		seg := in.buf[in.pos:in.end]
		if q := bytes.IndexByte(seg, '"'); q >= 0 {
			if err := p.decodeBlock(seg[:q], true); err != nil {
				return err
			}
			in.pos += q
			_, err := in.next() // closing quote
			return err
		}
		// Hold back the last whole quantum: until the closing quote is in
		// sight, it may be the final, padded one.
		k := len(seg) &^ 3
		if k == len(seg) {
			k -= 4
		}
		if k > 0 {
			if err := p.decodeBlock(seg[:k], false); err != nil {
				return err
			}
			in.pos += k
		}
		if err := in.more(); err != nil {
			return readFailure(err, "in "+member(dataMember))
		}
	}
}

// decodeBlock decodes src, at most one input buffer of base64. final says
// src ends at the closing quote. Only the last quantum of the final block
// may be padded.
//
// The fast path is one standard-library call. Strict decoding refuses every
// byte outside the alphabet and "=", and non-zero pad bits; the remaining
// leniencies (skipped CR/LF, padding that ends a non-final block) always
// decode fewer bytes than the canonical length, so comparing lengths closes
// them.
func (p *parser) decodeBlock(src []byte, final bool) error {
	want := len(src) / 4 * 3
	if final {
		if len(src)%4 != 0 {
			return explainBase64(src, final)
		}
		want -= padCount(src)
	}
	n, err := strict.Decode(p.scratch, src)
	if err != nil || n != want {
		return explainBase64(src, final)
	}
	out := p.scratch[:n]
	p.hash.Write(out)
	p.window.add(p.count, out)
	p.count += int64(n)
	return nil
}

func padCount(src []byte) int {
	n := 0
	for i := len(src) - 1; i >= 0 && i >= len(src)-2 && src[i] == '='; i-- {
		n++
	}
	return n
}

// explainBase64 names why src is not canonical base64. It runs only on the
// error path, so it may look at every byte.
func explainBase64(src []byte, final bool) error {
	pads := 0
	if final {
		for i := len(src) - 1; i >= 0 && src[i] == '='; i-- {
			pads++
		}
	}
	for i, c := range src {
		switch {
		case c == '\\':
			return malformed("JSON escape inside %s (non-canonical base64)", member(dataMember))
		case isSpace(c):
			return malformed("whitespace inside %s (non-canonical base64)", member(dataMember))
		case c < 0x20:
			return malformed("control character inside %s", member(dataMember))
		case c == '-' || c == '_':
			return malformed("URL-safe base64 alphabet inside %s", member(dataMember))
		case c == '=':
			if i < len(src)-pads {
				return malformed("base64 padding before the end of %s", member(dataMember))
			}
		case !isBase64(c):
			return malformed("invalid base64 character inside %s", member(dataMember))
		}
	}
	if len(src)%4 != 0 || pads > 2 {
		return malformed("non-canonical base64 padding")
	}
	return malformed("non-zero base64 pad bits")
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}
