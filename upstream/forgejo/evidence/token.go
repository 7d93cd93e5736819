package evidence

import (
	"unicode/utf16"
	"unicode/utf8"
)

// tok is the JSON type of a scalar token.
type tok uint8

const (
	tokString tok = iota
	tokNumber
	tokTrue
	tokFalse
	tokNull
)

// value is one scalar metadata value: raw is the token exactly as received
// (quotes and escapes included), str the unescaped text of a string.
type value struct {
	tok tok
	raw []byte
	str string
}

func (t tok) kind() kind {
	switch t {
	case tokString:
		return kindString
	case tokNumber:
		return kindNumber
	default:
		return kindBool
	}
}

// readScalar reads a string, number or literal; what names the member for
// messages.
func (p *parser) readScalar(what string) (value, error) {
	c, err := p.in.peek()
	if err != nil {
		return value{}, err
	}
	switch {
	case c == '"':
		raw, s, err := p.readString(what)
		return value{tok: tokString, raw: raw, str: s}, err
	case c == '-' || c >= '0' && c <= '9':
		raw, err := p.readNumber(what)
		return value{tok: tokNumber, raw: raw}, err
	case c == 't':
		return value{tok: tokTrue, raw: []byte("true")}, p.readLiteral("true", what)
	case c == 'f':
		return value{tok: tokFalse, raw: []byte("false")}, p.readLiteral("false", what)
	case c == 'n':
		return value{tok: tokNull, raw: []byte("null")}, p.readLiteral("null", what)
	}
	return value{}, malformed("invalid JSON value for %s", what)
}

func (p *parser) readLiteral(lit, what string) error {
	for i := 0; i < len(lit); i++ {
		c, err := p.in.next()
		if err != nil {
			return err
		}
		if c != lit[i] {
			return malformed("invalid JSON literal for %s", what)
		}
	}
	return nil
}

// readNumber reads a number by the JSON grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. Whether it is the integer a
// member needs is decided later; what follows it is checked by the caller.
func (p *parser) readNumber(what string) ([]byte, error) {
	var raw []byte
	// accept consumes the next byte if ok holds for it.
	accept := func(ok func(byte) bool) (bool, error) {
		c, err := p.in.peek()
		if err != nil || !ok(c) {
			return false, err
		}
		if _, err := p.in.next(); err != nil {
			return false, err
		}
		raw = append(raw, c)
		return true, nil
	}
	// digits consumes a run of at least one digit.
	digits := func() error {
		for n := 0; ; n++ {
			ok, err := accept(isDigit)
			if err != nil {
				return err
			}
			if !ok {
				if n == 0 {
					return malformed("invalid JSON number for %s", what)
				}
				return nil
			}
		}
	}
	if _, err := accept(func(c byte) bool { return c == '-' }); err != nil {
		return nil, err
	}
	zero, err := accept(func(c byte) bool { return c == '0' })
	if err != nil {
		return nil, err
	}
	if !zero {
		if err := digits(); err != nil {
			return nil, err
		}
	}
	if dot, err := accept(func(c byte) bool { return c == '.' }); err != nil {
		return nil, err
	} else if dot {
		if err := digits(); err != nil {
			return nil, err
		}
	}
	if exp, err := accept(func(c byte) bool { return c == 'e' || c == 'E' }); err != nil {
		return nil, err
	} else if exp {
		if _, err := accept(func(c byte) bool { return c == '+' || c == '-' }); err != nil {
			return nil, err
		}
		if err := digits(); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// readString reads a JSON string and returns it raw (with quotes) and
// unescaped. Control characters, bad escapes, lone surrogates and invalid
// UTF-8 are refused.
func (p *parser) readString(what string) (raw []byte, s string, err error) {
	if _, err := p.in.next(); err != nil { // opening quote
		return nil, "", err
	}
	raw = append(raw, '"')
	var dec []byte
	for {
		c, err := p.in.next()
		if err != nil {
			return nil, "", err
		}
		raw = append(raw, c)
		switch {
		case c == '"':
			if !utf8.Valid(dec) {
				return nil, "", malformed("invalid UTF-8 in %s", what)
			}
			return raw, string(dec), nil
		case c < 0x20:
			return nil, "", malformed("control character in %s", what)
		case c != '\\':
			dec = append(dec, c)
			continue
		}
		c, err = p.in.next()
		if err != nil {
			return nil, "", err
		}
		raw = append(raw, c)
		switch c {
		case '"', '\\', '/':
			dec = append(dec, c)
		case 'b':
			dec = append(dec, '\b')
		case 'f':
			dec = append(dec, '\f')
		case 'n':
			dec = append(dec, '\n')
		case 'r':
			dec = append(dec, '\r')
		case 't':
			dec = append(dec, '\t')
		case 'u':
			r, err := p.readHex4(&raw, what)
			if err != nil {
				return nil, "", err
			}
			if utf16.IsSurrogate(r) {
				r, err = p.readLowSurrogate(r, &raw, what)
				if err != nil {
					return nil, "", err
				}
			}
			dec = utf8.AppendRune(dec, r)
		default:
			return nil, "", malformed("invalid escape in %s", what)
		}
	}
}

// readLowSurrogate completes a surrogate pair whose first half is hi.
func (p *parser) readLowSurrogate(hi rune, raw *[]byte, what string) (rune, error) {
	bad := malformed("invalid Unicode escape in %s", what)
	if hi >= 0xDC00 {
		return 0, bad
	}
	for _, want := range []byte{'\\', 'u'} {
		c, err := p.in.next()
		if err != nil {
			return 0, err
		}
		*raw = append(*raw, c)
		if c != want {
			return 0, bad
		}
	}
	lo, err := p.readHex4(raw, what)
	if err != nil {
		return 0, err
	}
	r := utf16.DecodeRune(hi, lo)
	if r == utf8.RuneError {
		return 0, bad
	}
	return r, nil
}

func (p *parser) readHex4(raw *[]byte, what string) (rune, error) {
	var r rune
	for range 4 {
		c, err := p.in.next()
		if err != nil {
			return 0, err
		}
		*raw = append(*raw, c)
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, malformed("invalid Unicode escape in %s", what)
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}
