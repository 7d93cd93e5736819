package evidence_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// newPatternDiff is a diff of n synthetic bytes built on a prime-length
// random pattern.
func newPatternDiff(n int64) et.Pattern { return et.Pattern{Bytes: randomDiff(4093, 11), N: n} }

// TestMemoryFlat streams a 256 MiB diff through the writer into Verify (the
// first page and the last) and asserts that the heap stays flat: the peak
// seen while verifying stays within 8 MiB of the heap before.
//
// It takes about 3 s, but about a minute under the race detector; only that
// combination is skipped with -short.
func TestMemoryFlat(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("256 MiB under the race detector takes about a minute; run without -short")
	}
	const size = 256 << 20
	start := time.Now()
	count, sum, err := et.Digest(newPatternDiff(size).Reader())
	if err != nil {
		t.Fatal(err)
	}
	e := et.Sample()
	e.ByteCount, e.SHA256 = count, sum
	for _, off := range []int64{0, size - 1000} {
		pr, pw := io.Pipe()
		go func() {
			_, err := et.Write(pw, e, newPatternDiff(size).Reader())
			pw.CloseWithError(err)
		}()

		var v *evidence.Verified
		var err error
		before, peak := et.HeapPeak(func() {
			v, err = evidence.Verify(pr, evidence.Request{Index: 7, Offset: off, Window: evidence.MaxWindow})
		})
		if err != nil {
			t.Fatal(err)
		}
		want := newPatternDiff(size).At(off, int(min(size-off, evidence.MaxWindow)))
		if !bytes.Equal(v.Window, want) || v.Identity.ByteCount != size || (off+int64(len(v.Window)) == size) != (off > 0) {
			t.Fatalf("offset %d: window of %d bytes of %d", off, len(v.Window), v.Identity.ByteCount)
		}
		growth := int64(peak) - int64(before)
		t.Logf("offset %d: heap before %d KiB, peak %d KiB, growth %d KiB",
			off, before>>10, peak>>10, growth>>10)
		if growth > 8<<20 {
			t.Fatalf("heap grew by %d bytes verifying a %d-byte diff", growth, size)
		}
	}
	t.Logf("256 MiB twice in %v", time.Since(start))
}
