package evidence_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// benchDiffLen makes a ~32 MiB entity (the base64 of 24 MiB).
const benchDiffLen = 24 << 20

var bench = sync.OnceValues(func() (entity, b64 []byte) {
	diff := randomDiff(benchDiffLen, 99)
	return et.Bytes(et.Sample(), diff), []byte(base64.StdEncoding.EncodeToString(diff))
})

// BenchmarkVerify measures the whole verifier on a ~32 MiB entity, window in
// the middle. Compare its MB/s with BenchmarkBaseline's in the same run.
func BenchmarkVerify(b *testing.B) {
	entity, _ := bench()
	req := req7(benchDiffLen/2, evidence.MaxWindow)
	b.SetBytes(int64(len(entity)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := evidence.Verify(bytes.NewReader(entity), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaseline is the floor the verifier is held to: plain standard
// base64 decoding of the same base64 text, streamed through the same 16 KiB
// buffer size, and SHA-256 of every decoded byte, with no JSON, no checks
// and no window.
func BenchmarkBaseline(b *testing.B) {
	_, b64 := bench()
	b.SetBytes(int64(len(b64)))
	b.ReportAllocs()
	for b.Loop() {
		baseline(b, b64)
	}
}

// BenchmarkVerifyVsBaseline runs one Verify and one baseline pass in turn
// on one locked OS thread, timing each by the thread's CPU time where the
// platform has it (see threadCPU), and reports verify/baseline, the
// throughput ratio. Load from other processes then hits neither side. The
// target is ≥ 0.9.
func BenchmarkVerifyVsBaseline(b *testing.B) {
	entity, b64 := bench()
	req := req7(benchDiffLen/2, evidence.MaxWindow)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var tv, tb time.Duration
	n := 0
	for b.Loop() {
		n++
		t0 := threadCPU()
		if _, err := evidence.Verify(bytes.NewReader(entity), req); err != nil {
			b.Fatal(err)
		}
		t1 := threadCPU()
		baseline(b, b64)
		tv, tb = tv+t1-t0, tb+threadCPU()-t1
	}
	vRate := float64(n*len(entity)) / tv.Seconds()
	bRate := float64(n*len(b64)) / tb.Seconds()
	b.Logf("timed by %s", cpuClock)
	b.ReportMetric(vRate/1e6, "verify-MB/s")
	b.ReportMetric(bRate/1e6, "baseline-MB/s")
	b.ReportMetric(vRate/bRate, "verify/baseline")
}

func baseline(b *testing.B, b64 []byte) {
	{
		r := bytes.NewReader(b64)
		src := make([]byte, evidence.InputBufferSize)
		dst := make([]byte, evidence.InputBufferSize/4*3)
		h := sha256.New()
		for {
			n, err := io.ReadFull(r, src)
			m, derr := base64.StdEncoding.Decode(dst, src[:n])
			if derr != nil {
				b.Fatal(derr)
			}
			h.Write(dst[:m])
			if err != nil {
				break
			}
		}
		h.Sum(nil)
	}
}
