package evidence_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// metaLen is what the metadata budget counts: every entity byte but the
// contents of the "data" string.
func metaLen(entity []byte, diff []byte) int {
	return len(entity) - base64.StdEncoding.EncodedLen(len(diff))
}

// TestMetadataBudget: exactly MaxMetadataBytes passes, one more byte fails,
// wherever the excess is; the diff itself is not counted.
func TestMetadataBudget(t *testing.T) {
	diff := randomDiff(100000, 5) // far more base64 than the budget
	base := et.Bytes(et.Sample(), diff)
	slack := evidence.MaxMetadataBytes - metaLen(base, diff)

	owner := func(extra int) []et.Option {
		return []et.Option{et.Override("repository.owner", `"team`+strings.Repeat("m", extra)+`"`)}
	}
	trailing := func(extra int) []et.Option { return []et.Option{et.Trailing(strings.Repeat(" ", extra))} }
	label := func(extra int) []et.Option { // a label of n base64 characters
		return []et.Option{et.Override("observations.original_fork.branch_b64",
			`"ZmVhdHVyZQ==`+strings.Repeat("A", extra)+`"`)}
	}
	for _, tc := range []struct {
		name string
		opts func(int) []et.Option
	}{{"owner", owner}, {"trailing whitespace", trailing}, {"label", label}} {
		for _, first := range []bool{false, true} {
			with := func(extra int) []byte {
				opts := tc.opts(extra)
				if first {
					opts = append(opts, et.DataFirst())
				}
				return et.Bytes(et.Sample(), diff, opts...)
			}
			at := with(slack)
			if got := metaLen(at, diff); got != evidence.MaxMetadataBytes {
				t.Fatalf("%s: built %d metadata bytes, want %d", tc.name, got, evidence.MaxMetadataBytes)
			}
			v, err := evidence.Verify(bytes.NewReader(at), req7(0, 10))
			if tc.name == "label" {
				// A 64 KiB label is within the budget but not canonical
				// base64 (the A run is not a multiple of 4): the point is
				// that it got past the budget to that check.
				wantRefusal(t, v, err, toolerr.EvidenceMalformed, "not canonical base64")
			} else {
				wantWindow(t, v, err, diff, req7(0, 10))
			}
			v, err = evidence.Verify(bytes.NewReader(with(slack+1)), req7(0, 10))
			wantRefusal(t, v, err, toolerr.EvidenceMetadataTooLarge, "exceeds 65536 bytes")
		}
	}
}

// TestMetadataBudgetEndless: an endless member is refused after the budget,
// not read to its end.
func TestMetadataBudgetEndless(t *testing.T) {
	r := &endless{prefix: []byte(`{"schema":"`), fill: 'a'}
	v, err := evidence.Verify(r, req7(0, 10))
	wantRefusal(t, v, err, toolerr.EvidenceMetadataTooLarge, "exceeds")
	if r.n > evidence.MaxMetadataBytes+2*evidence.InputBufferSize {
		t.Fatalf("read %d bytes before refusing", r.n)
	}
}

type endless struct {
	prefix []byte
	fill   byte
	n      int
}

func (e *endless) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) {
		if e.n < len(e.prefix) {
			p[k] = e.prefix[e.n]
		} else {
			p[k] = e.fill
		}
		k++
		e.n++
	}
	return k, nil
}
