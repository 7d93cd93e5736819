package evidence

// window keeps the one candidate window: decoded bytes
// [off, off+max) that pass by, and nothing else.
type window struct {
	off int64
	max int
	buf []byte
}

// add offers the decoded bytes b found at diff position pos. Decoded bytes
// arrive in order, so the window only ever grows at its end.
func (w *window) add(pos int64, b []byte) {
	if len(w.buf) == w.max {
		return
	}
	next := w.off + int64(len(w.buf)) // the next diff position the window needs
	end := pos + int64(len(b))
	if next >= end || next < pos {
		return
	}
	n := min(end-next, int64(w.max-len(w.buf)))
	start := next - pos
	w.buf = append(w.buf, b[start:start+n]...)
}
