package evidence_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// chunkReader returns reads of random sizes between 1 and max bytes.
type chunkReader struct {
	r   io.Reader
	rnd *rand.Rand
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	n := 1 + c.rnd.IntN(c.max)
	return c.r.Read(p[:min(n, len(p))])
}

// readers feed an entity in different split patterns.
// Slow ones are tried with fewer windows.
var readers = []struct {
	name string
	slow bool
	wrap func([]byte) io.Reader
}{
	{"whole", false, func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"one byte", true, func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
	{"half", false, func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }},
	{"data with EOF", false, func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }},
	{"random small", true, func(b []byte) io.Reader {
		return &chunkReader{r: bytes.NewReader(b), rnd: rand.New(rand.NewPCG(uint64(len(b)), 1)), max: 7}
	}},
	{"random large", false, func(b []byte) io.Reader {
		return &chunkReader{r: bytes.NewReader(b), rnd: rand.New(rand.NewPCG(uint64(len(b)), 2)), max: 40000}
	}},
}

// offsets are the window starts worth trying for a diff of n bytes: the
// ends, the middle, both sides of base64 quanta and of decode blocks (one
// 16 KiB input buffer decodes to at most 12 KiB).
func offsets(n int64) []int64 {
	cands := []int64{0, 1, 2, 3, 4, 5, n / 2, n/2 + 1, n - 3, n - 2, n - 1, n}
	for _, b := range []int64{12285, 12288, 24570, 24576} {
		cands = append(cands, b-1, b, b+1)
	}
	var out []int64
	seen := map[int64]bool{}
	for _, c := range cands {
		if c >= 0 && c <= n && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// TestStreamSplits: the same entity, split any way, in any member order,
// gives the same window at every boundary.
func TestStreamSplits(t *testing.T) {
	sizes := []int{0, 1, 2, 3, 4, 5, 6, 7, 12287, 12288, 12289, 40000, 40001}
	layouts := []struct {
		name string
		opts []et.Option
	}{
		{"canonical", nil},
		{"data first", []et.Option{et.DataFirst()}},
		{"spaced", []et.Option{et.Spaced(), et.Trailing("\n")}},
	}
	for _, size := range sizes {
		diff := randomDiff(size, uint64(size)+100)
		for _, l := range layouts {
			entity := et.Bytes(et.Sample(), diff, l.opts...)
			for _, rd := range readers {
				if rd.name == "one byte" && size > 13000 {
					continue // 12289 already crosses every buffer boundary
				}
				t.Run(fmt.Sprintf("%d/%s/%s", size, l.name, rd.name), func(t *testing.T) {
					windows := []int{1, 4, 4096, evidence.MaxWindow}
					if rd.slow {
						windows = []int{4, evidence.MaxWindow}
					}
					for _, off := range offsets(int64(size)) {
						for _, w := range windows {
							req := req7(off, w)
							v, err := evidence.Verify(rd.wrap(entity), req)
							wantWindow(t, v, err, diff, req)
						}
					}
				})
			}
		}
	}
}

// TestLateFaultsUnderSplits: a fault after the requested window refuses the
// page however the entity is split.
func TestLateFaultsUnderSplits(t *testing.T) {
	diff := randomDiff(30001, 9)
	for _, f := range []struct {
		opts []et.Option
		msg  string
	}{
		{[]et.Option{et.CorruptByteAt(30000)}, "sha256 mismatch"},
		{[]et.Option{et.InvalidCharAt(29999)}, "invalid base64 character"},
		{[]et.Option{et.NonZeroPadBits()}, "non-zero base64 pad bits"},
		{[]et.Option{et.BadPadding()}, "non-canonical base64 padding"},
		{[]et.Option{et.EscapedCharAt(29998)}, "JSON escape"},
		{[]et.Option{et.Duplicate("content")}, `duplicate member "content"`},
		{[]et.Option{et.TruncateBy(1)}, "truncated entity"},
		{[]et.Option{et.Trailing("\n}")}, "trailing bytes"},
		{[]et.Option{et.WrongSHA256()}, "sha256 mismatch"},
	} {
		entity := et.Bytes(et.Sample(), diff, f.opts...)
		for _, rd := range readers {
			v, err := evidence.Verify(rd.wrap(entity), req7(0, 10))
			wantRefusal(t, v, err, toolerr.EvidenceMalformed, f.msg)
		}
	}
}

// TestPaddingFaults covers the final quantum for every diff length modulo 3.
func TestPaddingFaults(t *testing.T) {
	for size := 0; size <= 8; size++ {
		diff := randomDiff(size, uint64(size))
		cases := []struct {
			opt et.Option
			msg string
		}{{et.BadPadding(), "non-canonical base64 padding"}}
		if size%3 != 0 {
			cases = append(cases, struct {
				opt et.Option
				msg string
			}{et.NonZeroPadBits(), "non-zero base64 pad bits"})
		}
		if size > 0 {
			cases = append(cases, struct {
				opt et.Option
				msg string
			}{et.InvalidCharAt(int64(size - 1)), "invalid base64 character"})
		}
		for _, c := range cases {
			for _, rd := range readers {
				v, err := evidence.Verify(rd.wrap(et.Bytes(et.Sample(), diff, c.opt)), req7(0, 10))
				wantRefusal(t, v, err, toolerr.EvidenceMalformed, c.msg)
			}
		}
	}
}
