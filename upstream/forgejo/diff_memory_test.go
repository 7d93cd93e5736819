package forgejo_test

import (
	"bytes"
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// diffPattern is the synthetic diff's prime-length pattern: text lines
// and a non-UTF-8 byte.
var diffPattern = evidencetest.LinePattern("+\tline of a generated diff, caf\xe9 <&> \"quoted\"\n")

// TestDiffEvidenceMemoryFlat serves a synthetic 256 MiB diff (32 MiB under
// the race detector) from the Core emulator over loopback HTTP and reads
// its first and last page through PullDiffEvidence, sampling the heap of
// the process, which holds both the emulator streaming the entity and the
// client verifying it. The peak must stay within 8 MiB of the heap before.
func TestDiffEvidenceMemoryFlat(t *testing.T) {
	size := int64(256 << 20)
	if raceEnabled {
		size = 32 << 20
	}
	emu, err := forgejoemu.Start(forgejoemu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	r, err := emu.CreateRepo("team", "project", forgejoemu.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("main", map[string][]byte{"a": []byte("a\n")}, nil, "init"); err != nil {
		t.Fatal(err)
	}
	if err := r.Branch("topic", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("topic", map[string][]byte{"b": []byte("b\n")}, nil, "b"); err != nil {
		t.Fatal(err)
	}
	p, err := emu.CreatePull("team", "project", forgejoemu.PullOptions{Head: "topic", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	gen := evidencetest.Pattern{Bytes: diffPattern, N: size}
	emu.SetSyntheticDiff("team", "project", p.Index(), gen.Reader)
	token := emu.IssueToken("team", "read:repository")
	u, _ := url.Parse(emu.URL())
	c := forgejo.New(upstream.New(upstream.Config{Name: "forgejo", Origin: u, IOTimeout: 30 * time.Second}))

	for _, off := range []int64{0, size - 1000} {
		start := time.Now()
		var v *evidence.Verified
		var err error
		before, peak := evidencetest.HeapPeak(func() {
			v, err = c.PullDiffEvidence(context.Background(), upstream.Credential{Token: token},
				forgejo.DiffEvidenceRequest{Owner: "team", Repo: "project", Index: p.Index(), Offset: off, Window: evidence.MaxWindow})
		})
		if err != nil {
			t.Fatal(err)
		}
		want := gen.At(off, int(min(size-off, evidence.MaxWindow)))
		if !bytes.Equal(v.Window, want) || v.Identity.ByteCount != size || (off+int64(len(v.Window)) == size) != (off > 0) {
			t.Fatalf("offset %d: window of %d bytes of %d", off, len(v.Window), v.Identity.ByteCount)
		}
		growth := int64(peak) - int64(before)
		t.Logf("%d MiB diff, offset %d: heap before %d KiB, peak %d KiB, growth %d KiB, %v",
			size>>20, off, before>>10, peak>>10, growth>>10, time.Since(start))
		if growth > 8<<20 {
			t.Fatalf("heap grew by %d bytes serving and verifying a %d-byte diff", growth, size)
		}
	}
}
