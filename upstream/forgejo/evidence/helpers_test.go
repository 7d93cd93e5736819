package evidence_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// req7 asks for a window of PR 7, the index of evidencetest.Sample.
func req7(off int64, window int) evidence.Request {
	return evidence.Request{Index: 7, Offset: off, Window: window}
}

// randomDiff returns n bytes that are not UTF-8 and whose base64 holds every
// character, '+' and '/' included.
func randomDiff(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// wantRefusal checks that Verify refused with code and a message holding
// substr, and published nothing.
func wantRefusal(t *testing.T, v *evidence.Verified, err error, code toolerr.Code, substr string) {
	t.Helper()
	if v != nil {
		t.Fatalf("Verify returned a result with error %v", err)
	}
	var te *toolerr.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *toolerr.Error", err, err)
	}
	if te.Code != code || !strings.Contains(te.Message, substr) {
		t.Fatalf("got %s: %q, want %s containing %q", te.Code, te.Message, code, substr)
	}
}

// wantWindow checks a successful result against the diff it came from.
func wantWindow(t *testing.T, v *evidence.Verified, err error, diff []byte, req evidence.Request) {
	t.Helper()
	if err != nil {
		t.Fatalf("Verify(offset %d, window %d): %v", req.Offset, req.Window, err)
	}
	end := min(req.Offset+int64(req.Window), int64(len(diff)))
	if want := diff[req.Offset:end]; !bytes.Equal(v.Window, want) {
		t.Fatalf("offset %d window %d: got %d bytes, want %d (equal prefix? %v)",
			req.Offset, req.Window, len(v.Window), len(want), bytes.HasPrefix(want, v.Window))
	}
	if v.Offset != req.Offset || v.Identity.ByteCount != int64(len(diff)) {
		t.Fatalf("offset %d, byte count %d; want %d, %d", v.Offset, v.Identity.ByteCount, req.Offset, len(diff))
	}
}
