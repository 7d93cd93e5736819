package upstream

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestHeadScanner feeds answer streams, as a connection delivers them, to
// the scanner: at once, one byte at a time, and in two halves at every
// split point. Each stream must give the same Content-Length line counts
// per final head, in order, and stop (lost) exactly where net/http's
// framing cannot be followed.
func TestHeadScanner(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
	cases := []struct {
		name   string
		stream string
		lines  []int // contentLengthLines of each final head
		lost   bool
	}{
		{"one line", ok, []int{1}, false},
		{"two identical lines", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", []int{2}, false},
		{"any spelling", "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nCONTENT-LENGTH:5\r\n\r\nhello", []int{2}, false},
		{"white space around the value", "HTTP/1.1 200 OK\r\nContent-Length: \t5 \r\nContent-Length:5\r\n\r\nhello", []int{2}, false},
		{"bare LF line ends", "HTTP/1.1 200 OK\nContent-Length: 5\n\nhello" + ok, []int{1, 1}, false},
		{"no length, zero", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + ok, []int{1, 1}, false},
		{"a name that only starts alike", "HTTP/1.1 200 OK\r\nContent-Length-X: 1\r\nX-Content-Length: 1\r\nContent-Length: 5\r\n\r\nhello", []int{1}, false},
		{"the body is not read as a head", "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n" + ok, []int{1, 1}, false},
		{"keep-alive: the next head counts alone", ok + "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nno" + ok, []int{1, 2, 1}, false},
		{"chunked, then another answer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n10 \r\n0123456789abcdef\r\n0\r\nX-Trailer: 1\r\nContent-Length: 9\r\n\r\n" + ok, []int{0, 1}, false},
		{"chunked without trailer", "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n0\r\n\r\n" + ok, []int{0, 1}, false},
		{"chunk data holding CRLFs", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n\r\n\r\n\r\n\r\n0\r\n\r\n" + ok, []int{0, 1}, false},
		{"1xx heads add no answer", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + ok, []int{1}, false},
		{"a 1xx head's repeated length counts", "HTTP/1.1 103 Early Hints\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n" + ok, []int{2}, false},
		{"204 and 304 have no body", "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n" + ok, []int{1, 0, 1}, false},
		{"HTTP/1.0 ignores Transfer-Encoding", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello" + ok, []int{1, 1}, false},
		{"folded line after another field", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 5\r\n\r\nhello", []int{1}, false},

		{"folded Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n 5\r\n\r\nhello" + ok, nil, true},
		{"differing lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello" + ok, []int{2}, true},
		{"a list in one line", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello" + ok, []int{1}, true},
		{"a signed length", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello" + ok, []int{1}, true},
		{"an empty length", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n" + ok, []int{1}, true},
		{"a body until the connection ends", "HTTP/1.1 200 OK\r\n\r\n" + ok, []int{0}, true},
		{"an unknown coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n" + ok, []int{0}, true},
		{"two codings", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + ok, []int{0}, true},
		{"a bare LF in a chunk line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n" + ok, []int{0}, true},
		{"no CRLF after chunk data", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n" + ok, []int{0}, true},
		{"a chunk size too long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("0", 17) + "1\r\n", []int{0}, true},
		{"a malformed status line", "HTTP/1.1 20 OK\r\nContent-Length: 5\r\n\r\nhello", nil, true},
		{"answers nobody asked for", strings.Repeat(ok, maxPendingHeads+1), []int{1, 1, 1, 1}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			feeds := map[string][][]byte{"at once": {[]byte(c.stream)}}
			var bytewise [][]byte
			for i := range len(c.stream) {
				bytewise = append(bytewise, []byte{c.stream[i]})
			}
			feeds["byte by byte"] = bytewise
			for i := 1; i < len(c.stream); i++ {
				feeds["split at "+strconv.Itoa(i)] = [][]byte{[]byte(c.stream[:i]), []byte(c.stream[i:])}
			}
			for how, parts := range feeds {
				s := newHeadScanner()
				for _, p := range parts {
					s.feed(p)
				}
				var got []int
				for {
					h, ok := s.take()
					if !ok {
						break
					}
					got = append(got, h.contentLengthLines)
				}
				if !slices.Equal(got, c.lines) || s.lost != c.lost {
					t.Fatalf("%s: heads %v, lost %v; want %v, lost %v", how, got, s.lost, c.lines, c.lost)
				}
			}
		})
	}
}
