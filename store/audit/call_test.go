package audit

import (
	"context"
	"testing"
)

// TestResultTextAskedOnlyWhenUnidentified: the record asks a call for its
// result text exactly when no evidence identifies the result (a diff page
// or a document fragment does), so the owned tools/call path may leave a
// fragment's text unbuilt; it never asks a refusal, and a grant's
// evidence does not stand for its result.
func TestResultTextAskedOnlyWhenUnidentified(t *testing.T) {
	for _, tc := range []struct {
		name     string
		evidence func(context.Context)
		refusal  bool
		asked    bool
	}{
		{"no evidence", func(context.Context) {}, false, true},
		{"grant", func(ctx context.Context) { SetGrant(ctx, GrantEvidence{NativeStatus: 201}) }, false, true},
		{"diff page", func(ctx context.Context) { SetDiff(ctx, DiffEvidence{ChunkBytes: 3}) }, false, false},
		{"document fragment", func(ctx context.Context) { SetDocument(ctx, DocumentEvidence{EndByte: 3}) }, false, false},
		{"refusal", func(context.Context) {}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Writer{queue: make(chan Record, 1), done: make(chan struct{})}
			ctx := WithEvidence(withPrincipal(context.Background(), "tok"))
			tc.evidence(ctx)
			asked := 0
			c := Call{Tool: "t", Outcome: "ok", Result: func() string { asked++; return "{}" }}
			if tc.refusal {
				c.Outcome, c.Result = "not_found", nil
			}
			if err := NewRecorder(BestEffort, w, []byte("k")).Record(ctx, c); err != nil {
				t.Fatal(err)
			}
			got := <-w.queue
			if want := map[bool]int{true: 1}[tc.asked]; asked != want {
				t.Fatalf("text asked for %d times, want %d", asked, want)
			}
			if hashed := got.Evidence.ResultSHA256 != ""; hashed != tc.asked {
				t.Fatalf("result hash %q, want one: %v", got.Evidence.ResultSHA256, tc.asked)
			}
			if identified := got.Evidence.Diff != nil || got.Evidence.Document != nil; identified == tc.asked && !tc.refusal {
				t.Fatalf("evidence %+v with the text asked for: %v", got.Evidence, tc.asked)
			}
		})
	}
}
