package documents

// validUTF8 reports whether p is well-formed UTF-8, exactly as
// utf8.Valid does (TestValidUTF8, FuzzValidUTF8), at less than half its
// cost on text that is mostly multi-byte characters: the whole file is
// checked on every fragment, and utf8.Valid decodes such text a
// character at a time with a branch on each character's length, which
// the processor mostly guesses wrong. This is a shift-based DFA: one
// table load and one shift per byte, with no branch on the data, and
// eight ASCII bytes at a time skipped between characters.
func validUTF8(p []byte) bool {
	state := uint64(accept)
	for len(p) >= 8 {
		if state&63 == accept {
			w := uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
				uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
			if w&0x8080808080808080 == 0 {
				p = p[8:]
				continue
			}
		}
		state = utf8Steps[p[0]] >> (state & 63)
		state = utf8Steps[p[1]] >> (state & 63)
		state = utf8Steps[p[2]] >> (state & 63)
		state = utf8Steps[p[3]] >> (state & 63)
		state = utf8Steps[p[4]] >> (state & 63)
		state = utf8Steps[p[5]] >> (state & 63)
		state = utf8Steps[p[6]] >> (state & 63)
		state = utf8Steps[p[7]] >> (state & 63)
		p = p[8:]
	}
	for _, b := range p {
		state = utf8Steps[b] >> (state & 63)
	}
	return state&63 == accept
}

// The states of validUTF8's automaton, each the offset in a utf8Steps
// entry of the 6-bit field holding the state a byte leads to from it.
// The refusal is 0, so that it is a sink without any bits set.
const (
	refused = 0
	accept  = 6  // between characters
	need1   = 12 // one continuation byte to go
	need2   = 18
	need3   = 24
	afterE0 = 30 // second byte A0–BF: no overlong form below U+0800
	afterED = 36 // second byte 80–9F: no surrogate
	afterF0 = 42 // second byte 90–BF: no overlong form below U+10000
	afterF4 = 48 // second byte 80–8F: nothing past U+10FFFF
)

// contLow and contHigh bound a continuation byte, 10xxxxxx.
const (
	contLow  = 0x80
	contHigh = 0xBF
)

// utf8Steps holds, for each byte, the state it leads to from every state
// (the Unicode Standard's table 3-7 of well-formed byte sequences).
var utf8Steps = func() (t [256]uint64) {
	to := func(b int, from, next uint64) { t[b] |= next << from }
	for b := range 256 {
		switch {
		case b < 0x80:
			to(b, accept, accept)
		case b >= 0xC2 && b <= 0xDF:
			to(b, accept, need1)
		case b == 0xE0:
			to(b, accept, afterE0)
		case b == 0xED:
			to(b, accept, afterED)
		case b >= 0xE1 && b <= 0xEF:
			to(b, accept, need2)
		case b == 0xF0:
			to(b, accept, afterF0)
		case b >= 0xF1 && b <= 0xF3:
			to(b, accept, need3)
		case b == 0xF4:
			to(b, accept, afterF4)
		}
		if b >= contLow && b <= contHigh {
			to(b, need1, accept)
			to(b, need2, need1)
			to(b, need3, need2)
		}
		if b >= 0xA0 && b <= contHigh {
			to(b, afterE0, need1)
		}
		if b >= contLow && b <= 0x9F {
			to(b, afterED, need1)
		}
		if b >= 0x90 && b <= contHigh {
			to(b, afterF0, need2)
		}
		if b >= contLow && b <= 0x8F {
			to(b, afterF4, need2)
		}
	}
	return t
}()
