// Package strictjson finds, in one pass, what lets two JSON decoders read
// the same valid text differently: a member name repeated in one object
// (exactly, or only after the case folding some decoder applies), nesting
// deeper than a bound, and numbers beyond float64's range.
//
// It is hand-written because no maintained library reports case-folded
// duplicates, and because the walk it replaces, over encoding/json's
// Decoder.Token, allocated for every token and was the largest cost of the
// gateway's own code per call (docs/performance.md). Callers first check
// the text with json.Valid (and, where they need them, utf8.Valid and
// LoneSurrogate, which json.Valid does not refuse); Check relies on that and reads only string bounds, brackets,
// commas and numbers: in an object the string right after '{' or ',' is a
// member name.
//
// Every layer uses it (the middleware's peek, the handlers' argument
// decoding and the upstream clients' answers), so it is a leaf under
// upstream/, the layer every other imports.
package strictjson

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"strconv"
	"sync"
)

// Problem says why a text was refused.
type Problem int

const (
	// OK: nothing found.
	OK Problem = iota
	// TooDeep: more than Options.MaxDepth objects and arrays nest.
	TooDeep
	// Repeated: one object holds the same member name twice.
	Repeated
	// RepeatedFolded: one object holds two names equal under Options.Fold.
	RepeatedFolded
	// NumberRange: a number is beyond float64's range.
	NumberRange
)

// Options says what Check refuses.
type Options struct {
	// MaxDepth bounds the nesting of objects and arrays.
	MaxDepth int
	// Fold maps an (unescaped) member name to the form under which two
	// names collide, e.g. strings.ToLower.
	Fold func(name string) string
	// FoldASCII is Fold for one byte of a name that is plain ASCII
	// without escapes, as a table (ASCIITable builds one from a function);
	// it must agree with Fold on such names, which are then folded in
	// place without allocating. A table, not a function: the fold runs
	// for every byte of every member name.
	FoldASCII *[128]byte
	// FloatRange refuses numbers beyond float64's range, which decoders
	// that read numbers as doubles turn into infinities or errors.
	FloatRange bool
}

// Check reads doc, which json.Valid accepted, and returns the first
// problem found and, for a repeated member, its name.
//
// Every call runs on a checker from a pool, and member names are keyed by
// a 64-bit hash of their folded form, so a check allocates nothing: a map
// keyed by the names themselves allocated a string for every member, and
// was most of the cost of reading an answer. A name whose hash is taken is
// compared in full with the name that took it; a different name with the
// same hash (a collision, about one in 2^64 a pair) is then kept by its
// folded text in the object's spill set, so no repeat is ever missed.
func Check(doc []byte, o *Options) (Problem, string) {
	c := checkers.Get().(*checker)
	defer c.release()
	return c.check(doc, o)
}

// checker is the reusable state of one Check.
type checker struct {
	stack []frame
	// Objects at one depth never overlap, so their name sets (hash of the
	// folded name → offset of the first raw name with it) are reused.
	sets        []map[uint64]int
	fold, other []byte
	hash        func(folded []byte) uint64
}

type frame struct {
	object bool
	key    bool // the next string in this object is a member name
	names  map[uint64]int
	// spill holds, by folded text, the names whose hash an earlier,
	// different name of the object took; nil until a collision.
	spill map[string]int
}

var checkers = sync.Pool{New: func() any { return &checker{hash: nameHash} }}

// maxPooledNames and maxPooledName bound what a pooled checker keeps: one
// huge object, or one huge member name, must not pin its memory for every
// later check.
const (
	maxPooledNames = 1024
	maxPooledName  = 4 << 10
)

func (c *checker) release() {
	for d, set := range c.sets {
		if len(set) > maxPooledNames {
			c.sets[d] = nil
		}
	}
	if cap(c.fold) > maxPooledName || cap(c.other) > maxPooledName {
		c.fold, c.other = nil, nil
	}
	c.stack = c.stack[:0]
	checkers.Put(c)
}

// nameSeed keys nameHash; one per process is enough, since a collision
// costs only a spill set.
var nameSeed = maphash.MakeSeed()

// nameHash hashes a folded member name. Tests give a checker a constant
// hash instead, so that every name collides and goes through the spill set.
func nameHash(folded []byte) uint64 { return maphash.Bytes(nameSeed, folded) }

func (c *checker) check(doc []byte, o *Options) (Problem, string) {
	for i := 0; i < len(doc); i++ {
		switch b := doc[i]; b {
		case '{', '[':
			if len(c.stack) >= o.MaxDepth {
				return TooDeep, ""
			}
			f := frame{object: b == '{', key: b == '{'}
			if f.object {
				d := len(c.stack)
				for len(c.sets) <= d {
					c.sets = append(c.sets, nil)
				}
				if c.sets[d] == nil {
					c.sets[d] = map[uint64]int{}
				}
				clear(c.sets[d])
				f.names = c.sets[d]
			}
			c.stack = append(c.stack, f)
		case '}', ']':
			c.stack = c.stack[:len(c.stack)-1]
		case ',':
			if n := len(c.stack); n > 0 && c.stack[n-1].object {
				c.stack[n-1].key = true
			}
		case '"':
			end := StringEnd(doc, i)
			if n := len(c.stack); n > 0 && c.stack[n-1].key {
				top := &c.stack[n-1]
				top.key = false
				if first, seen := c.seen(top, doc, i, end, o); seen {
					return repeated(doc, first, i)
				}
			}
			i = end
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end := i + 1
			for end < len(doc) && isNumberByte(doc[end]) {
				end++
			}
			if o.FloatRange && !fitsFloat64(doc[i:end]) {
				return NumberRange, ""
			}
			i = end - 1
		}
	}
	return OK, ""
}

// seen records the member name doc[open:end+1] in the object f and
// returns the offset of an earlier name of f equal to it once folded.
func (c *checker) seen(f *frame, doc []byte, open, end int, o *Options) (first int, seen bool) {
	c.fold = foldName(c.fold[:0], doc[open:end+1], o)
	h := c.hash(c.fold)
	first, taken := f.names[h]
	if !taken {
		f.names[h] = open
		return 0, false
	}
	c.other = foldName(c.other[:0], doc[first:StringEnd(doc, first)+1], o)
	if bytes.Equal(c.fold, c.other) {
		return first, true
	}
	if f.spill == nil {
		f.spill = map[string]int{}
	}
	if first, seen = f.spill[string(c.fold)]; seen {
		return first, true
	}
	f.spill[string(c.fold)] = open
	return 0, false
}

// foldName appends the folded form of the member name lit (a string
// literal, quotes included) to dst.
func foldName(dst, lit []byte, o *Options) []byte {
	if folded, ok := foldPlain(dst, lit[1:len(lit)-1], o.FoldASCII); ok {
		return folded
	}
	return append(dst, o.Fold(unquote(lit))...)
}

// repeated tells an exact repeat from a folded one, given the offsets of
// the two names' opening quotes.
func repeated(doc []byte, first, second int) (Problem, string) {
	a := unquote(doc[first : StringEnd(doc, first)+1])
	b := unquote(doc[second : StringEnd(doc, second)+1])
	if a == b {
		return Repeated, a
	}
	return RepeatedFolded, b
}

// unquote decodes one JSON string literal of valid JSON text.
func unquote(lit []byte) string {
	var s string
	_ = json.Unmarshal(lit, &s) // valid JSON: cannot fail
	return s
}

// foldPlain appends the folded form of a name that is plain ASCII without
// escapes; ok is false for any other name.
func foldPlain(dst, raw []byte, foldASCII *[128]byte) ([]byte, bool) {
	for _, b := range raw {
		if b == '\\' || b >= 0x80 {
			return dst, false
		}
		dst = append(dst, foldASCII[b])
	}
	return dst, true
}

// ASCIITable is the Options.FoldASCII table of a fold of single ASCII bytes.
func ASCIITable(fold func(b byte) byte) *[128]byte {
	var t [128]byte
	for b := range t {
		t[b] = fold(byte(b))
	}
	return &t
}

// StringEnd returns the index of the quote closing the JSON string that
// opens at doc[open], or -1 when no quote closes it (never in valid JSON;
// the GitHub client's scan of unchecked text relies on it). A quote closes
// the string unless an odd run of backslashes stands before it; the quotes
// are found with bytes.IndexByte, which is much faster than a
// byte-by-byte look for either a quote or a backslash.
func StringEnd(doc []byte, open int) int {
	for j := open + 1; ; {
		k := bytes.IndexByte(doc[j:], '"')
		if k < 0 {
			return -1
		}
		k += j
		run := 0
		for doc[k-1-run] == '\\' { // stops at the opening quote at the latest
			run++
		}
		if run%2 == 0 {
			return k
		}
		j = k + 1
	}
}

func isNumberByte(b byte) bool {
	return '0' <= b && b <= '9' || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-'
}

// fitsFloat64 reports whether a JSON number is within float64's range.
// Short integers, the IDs and counts of real answers, are without parsing.
func fitsFloat64(num []byte) bool {
	if len(num) <= 15 && !bytes.ContainsAny(num, ".eE") {
		return true
	}
	_, err := strconv.ParseFloat(string(num), 64)
	return err == nil
}

// ASCIILower is the ASCII half of strings.ToLower, for Options.FoldASCII
// (through ASCIITable): it lowers A-Z and leaves every other byte.
func ASCIILower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
