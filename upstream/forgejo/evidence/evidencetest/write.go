package evidencetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// chunk is how much diff the writer reads at once: a multiple of 3, so
// that only the last chunk's base64 is padded.
const chunk = 3 << 12

// Len returns the exact number of bytes Write writes for e (whose ByteCount
// must be the diff's length) and the same options, without reading the diff:
// a server's Content-Length.
func Len(e Entity, opts ...Option) (int64, error) {
	p, err := build(e, opts)
	if err != nil {
		return 0, err
	}
	n := p.fullLen()
	if p.truncate >= 0 && p.truncate < n {
		n = p.truncate
	}
	return n, nil
}

// Write writes the entity for e with the diff read from diff, in constant
// memory whatever the diff's size, and returns the bytes written. e.ByteCount
// and e.SHA256 must describe the diff (see Digest and WithDiff): after the
// stream, Write reports an error if they do not, since the entity it wrote
// is then not the one asked for. An option that cannot apply to e is an
// error before anything is written.
func Write(w io.Writer, e Entity, diff io.Reader, opts ...Option) (int64, error) {
	p, err := build(e, opts)
	if err != nil {
		return 0, err
	}
	lw := &limitWriter{w: w, limit: p.truncate}
	err = p.write(lw, e, diff)
	if errors.Is(err, errLimit) {
		err = nil
	}
	return lw.n, err
}

// Bytes returns the entity for e with diff in memory, e's ByteCount and
// SHA256 set from diff. It is for tests and panics when an option does not
// apply.
func Bytes(e Entity, diff []byte, opts ...Option) []byte {
	var b bytes.Buffer
	if _, err := Write(&b, e.WithDiff(diff), bytes.NewReader(diff), opts...); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func (p *plan) write(w io.Writer, e Entity, diff io.Reader) error {
	if _, err := w.Write(p.prefix); err != nil {
		return err
	}
	if p.streams {
		count, sum, err := p.writeData(w, diff)
		if err != nil {
			return err
		}
		if _, err := w.Write(p.suffix); err != nil {
			return err
		}
		if count != e.ByteCount || sum != e.SHA256 {
			return fmt.Errorf("evidencetest: the diff stream has %d bytes and sha256 %s; the entity declares %d and %s",
				count, sum, e.ByteCount, e.SHA256)
		}
	}
	return nil
}

// writeData streams diff as base64 with the plan's stream faults and
// returns the length and SHA-256 of the bytes read (before any corruption).
func (p *plan) writeData(w io.Writer, diff io.Reader) (int64, string, error) {
	enc := base64.StdEncoding
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	if p.urlAlphabet {
		enc = base64.URLEncoding
		alphabet = alphabet[:62] + "-_"
	}
	raw := make([]byte, chunk)
	out := make([]byte, enc.EncodedLen(chunk)+2)
	d := &dataWriter{w: w, plan: p}
	h := sha256.New()
	var count int64
	for {
		n, err := io.ReadFull(diff, raw)
		final := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !final {
			return 0, "", err
		}
		b := raw[:n]
		h.Write(b)
		if at := p.corruptAt - count; p.corruptAt >= 0 && at >= 0 && at < int64(n) {
			b[at] ^= 1
		}
		count += int64(n)
		m := enc.EncodedLen(n)
		enc.Encode(out, b)
		if final {
			m = p.finalQuantum(out, m, count, alphabet)
		}
		if err := d.write(out[:m]); err != nil {
			return 0, "", err
		}
		if final {
			return count, hex.EncodeToString(h.Sum(nil)), nil
		}
	}
}

// finalQuantum applies the padding faults to the end of the base64 text
// out[:m], for a diff of total bytes, and returns the new length.
func (p *plan) finalQuantum(out []byte, m int, total int64, alphabet string) int {
	rem := total % 3
	if p.padBits && rem != 0 {
		// "XY==" keeps 4 pad bits in Y, "XYZ=" 2 in Z; set the lowest.
		i := m - 3
		if rem == 2 {
			i = m - 2
		}
		out[i] = alphabet[bytes.IndexByte([]byte(alphabet), out[i])|1]
	}
	if p.badPadding {
		if rem == 0 {
			return m + copy(out[m:], "==")
		}
		return m - int(3-rem)
	}
	return m
}

// dataWriter writes base64 text, applying the per-character faults.
type dataWriter struct {
	w    io.Writer
	plan *plan
	pos  int64 // base64 characters written so far
	tmp  []byte
}

func (d *dataWriter) write(b []byte) error {
	p := d.plan
	if !p.lineBreaks && p.invalidAt < 0 && p.escapeAt < 0 {
		d.pos += int64(len(b))
		_, err := d.w.Write(b)
		return err
	}
	out := d.tmp[:0]
	for _, c := range b {
		if p.lineBreaks && d.pos > 0 && d.pos%76 == 0 {
			out = append(out, '\\', 'n')
		}
		switch {
		case p.invalidAt >= 0 && d.pos == p.invalidAt/3*4:
			out = append(out, '*')
		case p.escapeAt >= 0 && d.pos == p.escapeAt/3*4:
			out = fmt.Appendf(out, `\u%04x`, c)
		default:
			out = append(out, c)
		}
		d.pos++
	}
	d.tmp = out
	_, err := d.w.Write(out)
	return err
}

var errLimit = errors.New("evidencetest: truncation point reached")

// limitWriter passes through the first limit bytes (all when limit < 0),
// then stops the writer with errLimit.
type limitWriter struct {
	w     io.Writer
	limit int64
	n     int64
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if l.limit >= 0 && l.n+int64(len(b)) > l.limit {
		k, err := l.w.Write(b[:l.limit-l.n])
		l.n += int64(k)
		if err != nil {
			return k, err
		}
		return k, errLimit
	}
	k, err := l.w.Write(b)
	l.n += int64(k)
	return k, err
}
