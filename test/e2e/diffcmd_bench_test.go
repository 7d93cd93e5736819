package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// commandPattern is the synthetic diff's prime-length pattern: ASCII diff
// lines, so every page carries its text as well as its data.
var commandPattern = et.LinePattern("+\tif (a < b && c > d) { s = \"generated\\tdiff\"; }\n")

// BenchmarkDiffCommand256MiB runs `agent-gateway diff` (the binary, built
// without the race detector) on a synthetic 16 MiB diff (about 1,100
// pages fitted to the envelope) and then a 256 MiB one (about 17,800),
// served by an MCP server in the test process, with
// stdout hashed by the test; it reports the command's peak RSS for each
// (getrusage ru_maxrss of the finished process), which must not grow with
// the diff, and the 256 MiB read's throughput. Each iteration is both
// reads.
//
//	go test ./test/e2e/ -run '^$' -bench DiffCommand256MiB -benchtime 1x
func BenchmarkDiffCommand256MiB(b *testing.B) {
	bin := buildPlainBinary(b)
	tokenFile := writeTokenFile(b, "bench-token")
	run := func(size int64) (maxRSSKiB int64, elapsed time.Duration) {
		gen := et.Pattern{Bytes: commandPattern, N: size}
		diff, err := diffreadtest.Stream(size, gen.Reader, gen.At)
		if err != nil {
			b.Fatal(err)
		}
		s := diffreadtest.Start(b, diffreadtest.Options{Owner: "bench", Repo: "big", Index: 1, Diff: diff, Token: "bench-token"})
		cmd := exec.Command(bin, "diff", "--endpoint", s.URL, "--token-file", tokenFile, "bench/big#1")
		h := sha256.New()
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = h, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%v: %s", err, stderr.String())
		}
		elapsed = time.Since(start)
		if hex.EncodeToString(h.Sum(nil)) != diff.SHA256 {
			b.Fatal("the command's output is not the diff")
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, elapsed
	}
	var small, large int64
	var took time.Duration
	for b.Loop() {
		s, _ := run(16 << 20)
		l, elapsed := run(256 << 20)
		small, large, took = max(small, s), max(large, l), took+elapsed
	}
	b.ReportMetric(float64(small)/1024, "16MiB-peak-RSS-MB")
	b.ReportMetric(float64(large)/1024, "256MiB-peak-RSS-MB")
	b.ReportMetric(float64(256*b.N)/took.Seconds(), "MiB/s")
	if large > small+8<<10 {
		b.Fatalf("peak RSS %d KiB reading 256 MiB, %d KiB reading 16 MiB: memory grows with the diff", large, small)
	}
}
