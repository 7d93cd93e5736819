package github

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git blob IDs are SHA-1; used to check integrity, not for security
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"slices"
	"strconv"

	asmbase64 "github.com/segmentio/asm/base64"

	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
)

// A Contents answer is a ~1 KB object around one large string: the file in
// base64, broken into lines by "\n" escapes. Decoding that string with
// encoding/json (validity scan, unescaping) and walking it again for the
// member check cost several milliseconds for a 200 KB document, on every
// fragment (docs/performance.md, "Document fragments"). splitContent lifts
// the string out so the checks read only the small rest, and reads the
// string itself in one pass: each line is found and gathered with the next
// ones into a 4 KiB stage, which is checked to hold nothing but base64,
// decoded and hashed while it is in cache, instead of a scan
// for the string's end, a check of its characters, a decoding and a hash
// of the decoded file one after the other.

// splitFile is what splitContent read of the content member.
type splitFile struct {
	// rest is the answer with the content string emptied.
	rest []byte
	// content is the decoded file, as far as it decoded.
	content []byte
	// err is the base64 refusal, reported where a whole reading reports
	// it: after the checks of the rest.
	err error
	// blobSHA is git's blob ID of content, hashed on the way when the
	// answer has a plain top-level size (before the content or after
	// it); "" otherwise, or when content is not size bytes long (then the
	// size check refuses it).
	blobSHA string
	// size is the size the blob ID's header was written with.
	size int64
	// buf is content's storage, from the pool (buffers.go); nil when
	// nothing was decoded.
	buf *[]byte
}

// splitContent finds the value of the top-level member spelt exactly
// "content" when it is a string of base64 characters and "\n" escapes,
// and reads it (splitFile). ok is false when the answer has no such member
// or its value holds anything else; the caller then reads the whole answer
// as before. For a valid answer rest is valid JSON holding the same
// members (content now ""); for an invalid one rest is invalid too, since
// only characters of a well-formed string were removed and the text before
// and after it is unchanged. A repeat of the member, under any spelling,
// stays in rest for the member check to refuse.
func splitContent(doc []byte) (f splitFile, ok bool) {
	if len(doc) == 0 || doc[0] != '{' {
		return f, false
	}
	size := int64(-1) // the top-level "size" member, when a plain integer
	scanMembers(doc, 0, 0, func(name []byte, end int) bool {
		switch string(name) {
		case "size":
			size = plainSize(doc, end+1)
		case "content":
			f, ok = readContent(doc, end+1, size)
			return false
		}
		return true
	})
	return f, ok
}

// scanMembers calls visit with each top-level member name of the object
// doc holds (its raw bytes, and the index of its closing quote), from
// doc[i] on at nesting depth, until visit returns false. A name is a
// string where a member name is expected (after "{" or "," at depth 1).
func scanMembers(doc []byte, i, depth int, visit func(name []byte, end int) bool) {
	expectKey := false
	for ; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			end := strictjson.StringEnd(doc, i)
			if end < 0 {
				return
			}
			if depth == 1 && expectKey && !visit(doc[i+1:end], end) {
				return
			}
			expectKey = false
			i = end
		case '{':
			depth++
			expectKey = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		}
	}
}

// sizeAfter is the top-level "size" member after the string opened at
// doc[open] (the content), as plainSize reads it: GitHub sends the size
// before the content, encoding/json's map order (the emulator's) after.
// Finding it first lets the blob be hashed while it is decoded; the
// content string is skipped at memchr speed, since base64 has no quotes.
func sizeAfter(doc []byte, open int) int64 {
	size := int64(-1)
	if k := bytes.IndexByte(doc[open+1:], '"'); k >= 0 {
		scanMembers(doc, open+1+k+1, 1, func(name []byte, end int) bool {
			if string(name) == "size" {
				size = plainSize(doc, end+1)
				return false
			}
			return true
		})
	}
	return size
}

// plainSize reads the value after a member name ending before doc[i] when
// it is a plain decimal integer up to MaxFileBytes followed by the end of
// the member; -1 otherwise (the checks of the rest then read it).
func plainSize(doc []byte, i int) int64 {
	i = strictjson.SkipSpace(doc, i)
	if i >= len(doc) || doc[i] != ':' {
		return -1
	}
	i = strictjson.SkipSpace(doc, i+1)
	j := i
	for j < len(doc) && j-i <= 8 && doc[j] >= '0' && doc[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(doc[i:j]), 10, 64)
	if err != nil || n > MaxFileBytes || (j-i > 1 && doc[i] == '0') {
		return -1
	}
	if k := strictjson.SkipSpace(doc, j); k >= len(doc) || (doc[k] != ',' && doc[k] != '}') {
		return -1
	}
	return n
}

// readContent reads the content member's value, whose name ends before
// doc[i], as splitContent describes; size is the reported size or -1.
func readContent(doc []byte, i int, size int64) (f splitFile, ok bool) {
	j := strictjson.SkipSpace(doc, i)
	if j >= len(doc) || doc[j] != ':' {
		return f, false
	}
	j = strictjson.SkipSpace(doc, j+1)
	if j >= len(doc) || doc[j] != '"' {
		return f, false
	}
	if size < 0 {
		size = sizeAfter(doc, j)
	}
	r := newBlobReader(size, len(doc))
	// The string ends at its first quote: base64 holds none, and an
	// escaped one is an escape other than "\n", refused either way. Found
	// once, it leaves one search per line, for the line break.
	rem := doc[j+1:]
	q := bytes.IndexByte(rem, '"')
	if q < 0 {
		return f, false // unterminated
	}
	for body := rem[:q]; ; {
		k := bytes.IndexByte(body, '\\')
		if k < 0 {
			if !r.line(body) {
				return f, false
			}
			break
		}
		if !r.line(body[:k]) {
			return f, false
		}
		if k+1 >= len(body) || body[k+1] != 'n' {
			return f, false // an escape other than "\n"
		}
		body = body[k+2:]
	}
	rem = rem[q:]
	if !r.finish() {
		return f, false
	}
	// rem starts at the closing quote.
	f.rest = make([]byte, 0, j+1+len(rem))
	f.rest = append(append(f.rest, doc[:j+1]...), rem...)
	f.content, f.err, f.size = r.out, r.err, size
	f.buf = r.buf
	*f.buf = r.out
	if r.h != nil && r.err == nil && int64(len(r.out)) == size {
		r.h.Write(r.out[r.hashed:])
		f.blobSHA = hex.EncodeToString(r.h.Sum(nil))
	}
	return f, true
}

// blobReader decodes base64 lines exactly as the strict decoder decodes
// the unescaped string, hashing the file as it goes: lines are gathered
// into a stage of stageBytes, whose whole 4-character groups are decoded
// at once (a group broken across a line break is joined there), and
// padding ends the data as it does in one string (anything after a group
// ending in "=" is refused). An unfinished group at the end is refused,
// as the padded alphabet refuses it. FuzzContentsJSON holds this to the
// one-string reading.
type blobReader struct {
	out    []byte
	buf    *[]byte   // out's storage comes from and goes back to the pool
	h      hash.Hash // nil when the size is not known in advance
	hashed int       // out[:hashed] is in h
	stage  []byte    // base64 read and not yet decoded
	padded bool
	err    error // the first base64 refusal; the rest is then only checked
}

// stageBytes is how much base64 is gathered before it is decoded, a
// multiple of 4: the decoder is fastest on long runs, and GitHub's lines
// are 60 characters.
const stageBytes = 4096

// hashChunk is how much decoded data is hashed at once: small enough to
// still be in cache, large enough that the hash's per-call cost vanishes.
const hashChunk = 8 << 10

func newBlobReader(size int64, docLen int) *blobReader {
	r := &blobReader{stage: make([]byte, 0, stageBytes), buf: getBuffer()}
	if size < 0 {
		r.out = room(*r.buf, base64.StdEncoding.DecodedLen(docLen))
		return r
	}
	// Two bytes over: the strict decoder wants room for three bytes from
	// the last group even when its padding makes it one or two.
	r.out = room(*r.buf, int(size)+2)
	r.h = sha1.New() //nolint:gosec // git object ID, not a security hash
	r.h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	return r
}

// room is buf emptied, or a new buffer when buf cannot hold n bytes.
func room(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, 0, n)
	}
	return buf[:0]
}

// line reads one line (no quote, no backslash); false when it holds a byte
// outside the base64 alphabet.
func (r *blobReader) line(line []byte) bool {
	for len(line) > 0 {
		k := copy(r.stage[len(r.stage):cap(r.stage)], line)
		r.stage, line = r.stage[:len(r.stage)+k], line[k:]
		if len(r.stage) == cap(r.stage) {
			if !r.groups(r.stage) {
				return false
			}
			r.stage = r.stage[:0]
		}
	}
	return true
}

// groups decodes whole 4-character groups; false when they hold a byte
// outside the base64 alphabet. The strict decoder refuses every such byte
// but "\r" and "\n", which it skips: a group that decoded to fewer bytes
// than its length says held one.
func (r *blobReader) groups(g []byte) bool {
	if len(g) == 0 {
		return true
	}
	if r.err == nil && r.padded {
		r.err = errAfterPadding
	}
	if r.err != nil {
		return base64Only(g)
	}
	r.out = slices.Grow(r.out, len(g)/4*3)
	n, err := strictBase64.Decode(r.out[len(r.out):cap(r.out)], g)
	if err != nil || n != len(g)/4*3-padding(g) {
		if !base64Only(g) {
			return false
		}
		r.err = err
		return true
	}
	r.out = r.out[:len(r.out)+n]
	r.padded = g[len(g)-1] == '='
	if r.h != nil && len(r.out)-r.hashed >= hashChunk {
		r.h.Write(r.out[r.hashed:])
		r.hashed = len(r.out)
	}
	return true
}

// finish decodes what is left in the stage and checks what is left of
// it, an unfinished group; false when it holds a byte outside the base64
// alphabet.
func (r *blobReader) finish() bool {
	whole := len(r.stage) &^ 3
	if !r.groups(r.stage[:whole]) {
		return false
	}
	rest := r.stage[whole:]
	if len(rest) == 0 {
		return true
	}
	if !base64Only(rest) {
		return false
	}
	if r.err == nil {
		r.err = errUnfinishedGroup
	}
	return true
}

// padding counts the "=" ending a group.
func padding(g []byte) int {
	n := 0
	for n < 2 && g[len(g)-1-n] == '=' {
		n++
	}
	return n
}

// base64Chars marks the bytes of the standard base64 alphabet and '='.
var base64Chars = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") {
		t[c] = true
	}
	return t
}()

// base64Only reports whether b holds only base64 characters and '='.
func base64Only(b []byte) bool {
	for _, c := range b {
		if !base64Chars[c] {
			return false
		}
	}
	return true
}

var (
	// strictBase64 is encoding/base64's strict standard decoder with an
	// AVX2 loop in front (segmentio/asm, which the MCP SDK's JSON package
	// already links): the loop decodes 32-character blocks of alphabet
	// characters and stops at anything else, which it leaves, and the
	// padding and every refusal, to encoding/base64. On the stage's runs
	// it decodes several times faster. TestStrictDecodersAgree and
	// FuzzStrictDecoders hold it to encoding/base64's strict decoder on
	// runs of whole groups, the only input it is given.
	strictBase64       = asmbase64.StdEncoding.Strict()
	errAfterPadding    = errors.New("base64 data after the padding")
	errUnfinishedGroup = errors.New("base64 data ends inside a 4-character group")
)
