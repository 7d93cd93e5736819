package upstream

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
)

// headScanner follows the HTTP/1.x responses read from one connection,
// byte by byte as net/http reads them, to count the Content-Length field
// lines of each response head. net/http cannot tell: it merges identical
// repeated Content-Length lines into one before anyone sees the header
// (fixLength), and docs/architecture.md#upstream-transport wants one
// Content-Length line.
//
// To know where the next head begins it follows each body's framing the
// way net/http does — a Content-Length body, chunked coding with its
// trailer, no body for 1xx, 204 and 304 (the gateway never sends HEAD) —
// without keeping any of it: memory is a few hundred bytes whatever the
// answer. Where it cannot follow (a length net/http would refuse, a body
// delimited by the connection's end, a line over net/http's own limits)
// it stops for good: every later answer on the connection finds no head
// recorded and is refused, so being lost fails closed.
type headScanner struct {
	mu    sync.Mutex
	heads []headFacts // final heads seen and not yet taken, oldest first
	lost  bool

	state       scanState
	line        [lineKeep]byte // the first bytes of the current line
	kept        int            // bytes of line in use
	lineLen     int            // the current line's length so far
	lastByte    byte           // its last byte so far
	sectionLen  int            // bytes of the current head or trailer so far
	statusLine  bool           // the next head line is a status line
	status      int
	http10      bool
	clLines     int
	clValue     string
	clBad       bool
	teLines     int
	teValue     string
	lastField   fieldKind
	interimCL   int   // most Content-Length lines of a 1xx head of this answer
	left        int64 // bytes of the current body or chunk still to pass
	chunkEndPos int   // bytes of the CRLF after chunk data seen
}

// headFacts is what one final response head carried.
type headFacts struct {
	// contentLengthLines counts its Content-Length field lines (any
	// spelling), or those of a 1xx interim head before it if more.
	contentLengthLines int
}

type scanState int

const (
	scanHead scanState = iota
	scanBody
	scanChunkSize
	scanChunkData
	scanChunkEnd
	scanTrailer
)

type fieldKind int

const (
	otherField fieldKind = iota
	contentLengthField
	transferEncodingField
)

const (
	// lineKeep is how much of a line is looked at: a status line's
	// version and code, a field name and a Content-Length or
	// Transfer-Encoding value with room for white space.
	lineKeep = 256
	// maxSection bounds a head or a trailer section. net/http refuses a
	// head over MaxResponseHeaderBytes (64 KiB) and a trailer over its
	// 4 KiB read buffer first; this only guards against a scanner that
	// never sees a line end.
	maxSection = 1 << 20
	// maxChunkLine is net/http's limit of a chunk-size line.
	maxChunkLine = 4096
	// maxPendingHeads bounds the heads recorded and not taken: more can
	// only be answers nobody asked for.
	maxPendingHeads = 4
)

func newHeadScanner() *headScanner { return &headScanner{statusLine: true} }

// take returns the oldest final head not yet taken; false when there is
// none (the scanner is lost, or saw no head).
func (s *headScanner) take() (headFacts, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.heads) == 0 {
		return headFacts{}, false
	}
	h := s.heads[0]
	s.heads = s.heads[1:]
	return h, true
}

// feed scans bytes read from the connection, in order.
func (s *headScanner) feed(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(p) > 0 && !s.lost {
		switch s.state {
		case scanBody, scanChunkData:
			n := min(int64(len(p)), s.left)
			s.left -= n
			p = p[n:]
			if s.left == 0 {
				if s.state == scanBody {
					s.nextHead()
				} else {
					s.state, s.chunkEndPos = scanChunkEnd, 0
				}
			}
		case scanChunkEnd:
			// net/http requires exactly CRLF after chunk data.
			if p[0] != "\r\n"[s.chunkEndPos] {
				s.lost = true
				return
			}
			p = p[1:]
			if s.chunkEndPos++; s.chunkEndPos == 2 {
				s.state = scanChunkSize
			}
		default:
			p = s.lineBytes(p)
		}
	}
}

// lineBytes takes the bytes of the current line from p, ends the line at
// a line feed, and returns what follows it.
func (s *headScanner) lineBytes(p []byte) []byte {
	part, rest, complete := p, []byte(nil), false
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		part, rest, complete = p[:i], p[i+1:], true
	}
	s.kept += copy(s.line[s.kept:], part)
	s.lineLen += len(part)
	s.sectionLen += len(part)
	if complete {
		s.sectionLen++
	}
	if len(part) > 0 {
		s.lastByte = part[len(part)-1]
	}
	if s.sectionLen > maxSection || (s.state == scanChunkSize && s.lineLen > maxChunkLine) {
		s.lost = true
		return nil
	}
	if complete {
		s.endLine()
	}
	return rest
}

// endLine handles one complete line, without its line end: as
// textproto reads head and trailer lines, one CR before the LF is dropped.
func (s *headScanner) endLine() {
	cr := s.lineLen > 0 && s.lastByte == '\r'
	line := s.line[:s.kept]
	truncated := s.lineLen > s.kept
	if cr && !truncated {
		line = line[:len(line)-1]
	}
	empty := s.lineLen == 0 || (cr && s.lineLen == 1)
	s.kept, s.lineLen, s.lastByte = 0, 0, 0
	switch s.state {
	case scanHead:
		s.headLine(line, truncated, empty)
	case scanChunkSize:
		s.chunkSize(line, truncated, cr)
	case scanTrailer:
		if empty {
			s.nextHead()
		}
	}
}

// headLine handles one line of a response head.
func (s *headScanner) headLine(line []byte, truncated, empty bool) {
	switch {
	case s.statusLine:
		s.statusLine = false
		s.status, s.http10 = parseStatusLine(line)
		if s.status == 0 {
			s.lost = true // net/http refuses the answer too
		}
	case empty:
		s.endHead()
	case line[0] == ' ' || line[0] == '\t':
		// An obsolete line folding continues the field before it; one
		// that would change a length or a coding cannot be followed.
		if s.lastField != otherField {
			s.lost = true
		}
	default:
		s.lastField = otherField
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return // net/http refuses the head
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			s.lastField = contentLengthField
			v := string(bytes.Trim(value, " \t"))
			s.clLines++
			switch {
			case truncated:
				s.clBad = true
			case s.clLines == 1:
				s.clValue = v
			case v != s.clValue:
				s.clBad = true // net/http refuses differing lengths
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			s.lastField = transferEncodingField
			s.teLines++
			s.teValue = string(bytes.Trim(value, " \t"))
			if truncated {
				s.teValue = ""
			}
		}
	}
}

// endHead ends a head: a 1xx interim head is followed by another head; a
// final head is recorded and its body followed as net/http frames it
// (transfer.go fixLength).
func (s *headScanner) endHead() {
	if s.status >= 100 && s.status < 200 && s.status != 101 {
		interim := max(s.interimCL, s.clLines)
		s.nextHead()
		s.interimCL = interim
		return
	}
	if len(s.heads) == maxPendingHeads {
		s.lost = true
		return
	}
	s.heads = append(s.heads, headFacts{contentLengthLines: max(s.clLines, s.interimCL)})
	var length int64 = -1
	if s.clLines > 0 {
		n, err := strconv.ParseUint(s.clValue, 10, 63)
		if s.clBad || err != nil {
			s.lost = true // net/http refuses the answer
			return
		}
		length = int64(n)
	}
	switch {
	case s.status/100 == 1 || s.status == 204 || s.status == 304:
		s.nextHead()
	case s.teLines > 0 && !s.http10:
		if s.teLines != 1 || !strings.EqualFold(s.teValue, "chunked") {
			s.lost = true // net/http refuses any other coding
			return
		}
		s.state, s.sectionLen = scanChunkSize, 0
	case length == 0:
		s.nextHead()
	case length > 0:
		s.state, s.left = scanBody, length
	default:
		// The body ends with the connection: nothing can follow it.
		s.lost = true
	}
}

// chunkSize handles a chunk-size line as net/http's chunked reader does:
// CRLF only, trailing white space and any extension dropped, at most 16
// hex digits.
func (s *headScanner) chunkSize(line []byte, truncated, cr bool) {
	if !cr || bytes.IndexByte(line, '\r') >= 0 {
		s.lost = true
		return
	}
	if !truncated {
		line = bytes.TrimRight(line, " \t")
	}
	size, _, ext := bytes.Cut(line, []byte(";"))
	if truncated && !ext {
		s.lost = true
		return
	}
	n, ok := parseChunkSize(size)
	switch {
	case !ok:
		s.lost = true
	case n == 0:
		s.state, s.sectionLen = scanTrailer, 0
	default:
		s.state, s.left = scanChunkData, n
	}
}

// nextHead makes the scanner wait for the next response head.
func (s *headScanner) nextHead() {
	s.state, s.sectionLen, s.statusLine = scanHead, 0, true
	s.status, s.http10 = 0, false
	s.clLines, s.clValue, s.clBad = 0, "", false
	s.teLines, s.teValue = 0, ""
	s.lastField, s.interimCL = otherField, 0
}

// parseStatusLine returns the status code of a status line as net/http
// reads it (the version, one or more spaces, three digits, then a space
// or the end) and whether the version is HTTP/1.0; code 0 for a line
// net/http would refuse.
func parseStatusLine(line []byte) (code int, http10 bool) {
	proto, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return 0, false
	}
	rest = bytes.TrimLeft(rest, " ")
	if len(rest) < 3 || (len(rest) > 3 && rest[3] != ' ') {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest[:3]))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, string(proto) == "HTTP/1.0"
}

// parseChunkSize parses 1 to 16 hex digits.
func parseChunkSize(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 16, 64)
	if err != nil || n > 1<<62 {
		return 0, false
	}
	return int64(n), true
}
