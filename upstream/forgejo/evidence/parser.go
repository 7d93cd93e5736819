package evidence

import (
	"crypto/sha256"
	"hash"
	"io"
)

// parser walks one entity. Metadata values land in values, keyed by their
// dotted member path ("generation.head.oid"); the "data" string is decoded,
// hashed and windowed on the fly and never kept.
type parser struct {
	in     input
	values map[string]value
	seen   map[string]bool // every member path met so far, objects included
	data   bool            // "data" met

	scratch []byte    // decoded bytes of one input buffer
	hash    hash.Hash // over every decoded byte
	count   int64     // decoded bytes so far
	window  window
}

func newParser(r io.Reader, req Request) *parser {
	return &parser{
		in:      input{r: r, buf: make([]byte, InputBufferSize)},
		values:  make(map[string]value, 32),
		seen:    make(map[string]bool, 48),
		scratch: make([]byte, InputBufferSize/4*3),
		hash:    sha256.New(),
		window:  window{off: req.Offset, max: req.Window, buf: make([]byte, 0, req.Window)},
	}
}

// parseEntity reads the whole entity: optional whitespace, one object of
// entityShape plus "data", optional whitespace, end of input.
func (p *parser) parseEntity() error {
	if err := p.in.skipSpace(); err != nil {
		return err
	}
	if c, err := p.in.peek(); err != nil {
		return err
	} else if c != '{' {
		return malformed("entity is not a JSON object")
	}
	if err := p.parseObject(entityShape, ""); err != nil {
		return err
	}
	if !p.data {
		return malformed("missing %s", member(dataMember))
	}
	if err := p.in.expectEnd(); err != nil {
		return err
	}
	if p.in.meta > MaxMetadataBytes {
		return tooLarge()
	}
	return nil
}

// parseObject reads an object of shape s found at path prefix ("" for the
// entity itself). Unknown and duplicate members are refused as soon as their
// name is read; missing ones when the object closes.
func (p *parser) parseObject(s shape, prefix string) error {
	if _, err := p.in.next(); err != nil { // '{'
		return err
	}
	if err := p.in.skipSpace(); err != nil {
		return err
	}
	c, err := p.in.peek()
	if err != nil {
		return err
	}
	if c == '}' {
		p.in.next()
		return p.checkComplete(s, prefix)
	}
	for {
		if c != '"' {
			return malformed("expected a member name in %s", objectName(prefix))
		}
		_, name, err := p.readString("a member name")
		if err != nil {
			return err
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if err := p.colon(); err != nil {
			return err
		}
		if err := p.parseMember(s, prefix, name, path); err != nil {
			return err
		}
		if err := p.in.skipSpace(); err != nil {
			return err
		}
		c, err = p.in.next()
		if err != nil {
			return err
		}
		if c == '}' {
			return p.checkComplete(s, prefix)
		}
		if c != ',' {
			return malformed("expected ',' or '}' after %s", member(path))
		}
		if err := p.in.skipSpace(); err != nil {
			return err
		}
		if c, err = p.in.peek(); err != nil {
			return err
		}
	}
}

// colon consumes the separator between a member name and its value.
func (p *parser) colon() error {
	if err := p.in.skipSpace(); err != nil {
		return err
	}
	c, err := p.in.next()
	if err != nil {
		return err
	}
	if c != ':' {
		return malformed("expected ':' after a member name")
	}
	return p.in.skipSpace()
}

func (p *parser) parseMember(s shape, prefix, name, path string) error {
	if prefix == "" && name == dataMember {
		if p.data {
			return malformed("duplicate %s", member(path))
		}
		p.data = true
		return p.parseData()
	}
	f := s.field(name)
	if f == nil {
		return malformed("unknown %s", member(path))
	}
	if p.seen[path] {
		return malformed("duplicate %s", member(path))
	}
	p.seen[path] = true
	c, err := p.in.peek()
	if err != nil {
		return err
	}
	if f.kind == kindObject {
		if c != '{' {
			return malformed("%s must be %s", member(path), f.kind)
		}
		return p.parseObject(f.shape, path)
	}
	if c == '{' || c == '[' {
		return malformed("%s must be %s", member(path), f.kind)
	}
	v, err := p.readScalar(member(path))
	if err != nil {
		return err
	}
	if v.tok.kind() != f.kind && !(v.tok == tokNull && f.nullable) {
		return malformed("%s must be %s", member(path), f.kind)
	}
	p.values[path] = v
	return nil
}

func (p *parser) checkComplete(s shape, prefix string) error {
	for _, f := range s {
		path := f.name
		if prefix != "" {
			path = prefix + "." + f.name
		}
		if !p.seen[path] {
			return malformed("missing %s", member(path))
		}
	}
	return nil
}

func objectName(prefix string) string {
	if prefix == "" {
		return "the entity"
	}
	return member(prefix)
}
