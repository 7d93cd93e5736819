package evidence

import "io"

// input is the one buffer every entity byte passes through. Metadata is read
// a byte at a time through peek and next, which also charge the metadata
// budget; the "data" string is read in bulk straight out of buf.
type input struct {
	r   io.Reader
	buf []byte
	pos int // next unread byte
	end int // end of buffered bytes
	eof bool
	err error // sticky read error other than io.EOF
	// meta counts every consumed byte outside the "data" string's contents.
	meta int
}

// more moves the unread bytes to the front of buf and reads at least one
// more byte. It returns io.EOF at the end of input.
func (in *input) more() error {
	if in.pos > 0 {
		in.end = copy(in.buf, in.buf[in.pos:in.end])
		in.pos = 0
	}
	// Like bufio, give up on a reader that keeps returning nothing.
	for range 100 {
		if in.err != nil {
			return in.err
		}
		if in.eof {
			return io.EOF
		}
		n, err := in.r.Read(in.buf[in.end:])
		in.end += n
		if err == io.EOF {
			in.eof = true
		} else if err != nil {
			in.err = err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// peek returns the next byte without consuming it.
func (in *input) peek() (byte, error) {
	if in.pos == in.end {
		if err := in.more(); err != nil {
			return 0, readFailure(err, "in metadata")
		}
	}
	return in.buf[in.pos], nil
}

// next consumes one metadata byte.
func (in *input) next() (byte, error) {
	c, err := in.peek()
	if err != nil {
		return 0, err
	}
	in.pos++
	if in.meta++; in.meta > MaxMetadataBytes {
		return 0, tooLarge()
	}
	return c, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace consumes JSON whitespace.
func (in *input) skipSpace() error {
	for {
		c, err := in.peek()
		if err != nil {
			return err
		}
		if !isSpace(c) {
			return nil
		}
		if _, err := in.next(); err != nil {
			return err
		}
	}
}

// expectEnd consumes trailing whitespace and requires the end of input.
func (in *input) expectEnd() error {
	for {
		if in.pos == in.end {
			err := in.more()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return readFailure(err, "after the closing brace")
			}
		}
		if !isSpace(in.buf[in.pos]) {
			return malformed("trailing bytes after the entity")
		}
		if _, err := in.next(); err != nil {
			return err
		}
	}
}
