package evidencetest

import (
	"io"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Pattern is a synthetic diff of N bytes that is never held in memory:
// byte i is Bytes[i % len(Bytes)]. A pattern of prime length keeps base64
// quanta and buffers out of step with it. Memory tests stream diffs of
// hundreds of MiB from one.
type Pattern struct {
	Bytes []byte
	N     int64
}

// PatternLength is the length of LinePattern's patterns: a prime.
const PatternLength = 4093

// LinePattern repeats line and cuts the result at PatternLength bytes, the
// Bytes of a Pattern whose every page looks like the lines of a diff.
func LinePattern(line string) []byte {
	return []byte(strings.Repeat(line, PatternLength/len(line)+1)[:PatternLength])
}

// Reader reads the whole diff.
func (p Pattern) Reader() io.Reader { return &patternReader{p.Bytes, 0, p.N} }

// At returns the diff's bytes [off, off+n).
func (p Pattern) At(off int64, n int) []byte {
	b, _ := io.ReadAll(&patternReader{p.Bytes, off, off + int64(n)})
	return b
}

type patternReader struct {
	pattern  []byte
	pos, end int64
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.pos >= r.end {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.end-r.pos)]
	for k := 0; k < len(p); {
		k += copy(p[k:], r.pattern[(r.pos+int64(k))%int64(len(r.pattern)):])
	}
	r.pos += int64(len(p))
	return len(p), nil
}

// HeapPeak runs f and returns the heap in use just before it (after a
// collection) and the highest heap in use sampled, every 10 ms, while it
// ran: the figures of a test that holds a verifier's memory flat.
func HeapPeak(f func()) (before, peak uint64) {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before = m.HeapAlloc
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var s runtime.MemStats
		for {
			runtime.ReadMemStats(&s)
			peak = max(peak, s.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return before, peak
}
