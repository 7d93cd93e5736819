package diffread_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"runtime"

	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// memoryPattern is the synthetic diff's prime-length pattern: ASCII diff
// lines with characters JSON escapes, so every page carries its text too
// (the largest pages).
var memoryPattern = et.LinePattern("+\tif (a < b && c > d) { s = \"generated\\tdiff\"; }\n")

// heapFigures are the memory figures of one read: the heap's growth over
// the heap before (after a collection) at its highest sample, garbage
// included, and the live heap's growth, measured after a collection every
// liveEvery pages: the second is what the reader keeps, and it must not
// grow with the diff.
type heapFigures struct {
	peak, live int64
}

const liveEvery = 32

// readPatternDiff serves a synthetic diff of size bytes from an MCP server
// in this process and reads it with Read into a hash, sampling the heap of
// the process (server and reader both) every 10 ms.
func readPatternDiff(tb testing.TB, size int64) (heapFigures, *diffread.Result, time.Duration) {
	tb.Helper()
	gen := et.Pattern{Bytes: memoryPattern, N: size}
	diff, err := diffreadtest.Stream(size, gen.Reader, gen.At)
	if err != nil {
		tb.Fatal(err)
	}
	s := diffreadtest.Start(tb, diffreadtest.Options{Owner: target.Owner, Repo: target.Repo, Index: target.Index, Diff: diff})
	h := sha256.New()
	var res *diffread.Result
	start := time.Now()
	var live uint64
	progress := func(p diffread.Progress) {
		if p.Pages%liveEvery == 0 {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			live = max(live, m.HeapAlloc)
		}
	}
	before, peak := et.HeapPeak(func() {
		res, err = diffread.Read(context.Background(), diffread.Options{Endpoint: s.URL, Progress: progress}, target, h)
	})
	elapsed := time.Since(start)
	if err != nil {
		tb.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != diff.SHA256 || res.Bytes != size {
		tb.Fatalf("read %d bytes hashing to %s, want %d bytes, %s", res.Bytes, got, size, diff.SHA256)
	}
	return heapFigures{peak: int64(peak) - int64(before), live: int64(live) - int64(before)}, res, elapsed
}

// check fails when the live heap grew by 2 MiB or more, or the sampled
// peak, garbage between collections included, by 16 MiB or more. The
// reader keeps one page at a time: the live growth (connection buffers,
// the sessions; about 0.5–0.8 MiB) is the same for 16 and 256 MiB, and a
// leak of one page per 128 pages would show at 256 MiB.
func (f heapFigures) check(tb testing.TB, size int64) {
	tb.Helper()
	if f.live >= 2<<20 || f.peak >= 16<<20 {
		tb.Fatalf("reading a %d-byte diff, the live heap grew by %d bytes and the peak by %d", size, f.live, f.peak)
	}
}

// TestReadMemoryFlat reads a 16 MiB diff (about 1,100 pages fitted to the
// envelope; 4 MiB under the race detector) and holds the heap flat;
// BenchmarkRead256MiB makes the same measurement on 256 MiB.
func TestReadMemoryFlat(t *testing.T) {
	size := int64(16 << 20)
	if raceEnabled {
		size = 4 << 20
	}
	f, res, elapsed := readPatternDiff(t, size)
	t.Logf("%d pages, live heap growth %d KiB, peak growth %d KiB, %v", res.Pages, f.live>>10, f.peak>>10, elapsed)
	f.check(t, res.Bytes)
}

// BenchmarkRead256MiB reads a synthetic 256 MiB diff (about 17,800 pages)
// from an MCP server in this process through Read and reports the heap's growth
// while reading (server and reader together): the live heap after a
// collection every 32 pages, which must stay under 2 MiB, and the
// sampled peak with garbage, under 16 MiB; and the throughput. Each
// iteration is one whole diff.
//
//	go test ./server/diffread/ -run '^$' -bench Read256MiB -benchtime 1x
func BenchmarkRead256MiB(b *testing.B) {
	const size = 256 << 20
	var worst heapFigures
	var pages int
	var took time.Duration
	for b.Loop() {
		f, res, elapsed := readPatternDiff(b, size)
		f.check(b, size)
		worst = heapFigures{peak: max(worst.peak, f.peak), live: max(worst.live, f.live)}
		pages, took = res.Pages, took+elapsed
	}
	b.ReportMetric(float64(worst.live)/(1<<10), "live-heap-growth-KiB")
	b.ReportMetric(float64(worst.peak)/(1<<20), "peak-heap-growth-MiB")
	b.ReportMetric(float64(pages), "pages")
	b.ReportMetric(float64(size)*float64(b.N)/(1<<20)/took.Seconds(), "MiB/s")
	b.SetBytes(size)
}
