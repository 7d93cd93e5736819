package audit

import (
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// writeDatedChain writes records 1 to n, record i at t0 plus i minutes,
// through a Writer's own write and checkpoint steps, signing a checkpoint
// after each record signAfter names; it returns the writer id.
func writeDatedChain(t *testing.T, st store.Store, key ed25519.PrivateKey, t0 time.Time, n int64, signAfter ...int64) string {
	t.Helper()
	w := &Writer{id: NewWriterID(), cfg: WriterConfig{Store: st, Key: key, Now: time.Now}, head: zeroHash}
	signed := map[int64]bool{}
	for _, s := range signAfter {
		signed[s] = true
	}
	for i := int64(1); i <= n; i++ {
		w.write([]Record{{At: t0.Add(time.Duration(i) * time.Minute), Tool: "t", Outcome: "ok", Target: Target{Index: i}}})
		if signed[i] {
			w.checkpoint()
		}
	}
	return w.id
}

// TestPurgeKeepsVerifiable: a purge deletes the prefix of each chain
// older than its cutoff up to a signed checkpoint, in transactions that
// each end at one, and keeps that checkpoint; the chain left verifies
// from it, names the purged range, and a record altered after the gap is
// still named. A prefix deleted otherwise (leaving an earlier checkpoint)
// is named missing.
func TestPurgeKeepsVerifiable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st, db := b.open(t)
			key := testKey(t)
			pub := []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}
			ctx := context.Background()
			writer := writeDatedChain(t, st, key, t0, 10, 3, 6, 10)
			// Records 1 to 7 are older than the cutoff; the last checkpoint
			// within them is at 6.
			res, err := st.PurgeAuditRecords(ctx, store.AuditPurgePolicy{Before: t0.Add(7*time.Minute + 30*time.Second), BatchSize: 2})
			if err != nil || !res.Ran || res.Deleted["audit_records"] != 6 || res.Deleted["audit_checkpoints"] != 1 {
				t.Fatalf("purge: %v %+v, want records 1-6 and the checkpoint at 3 deleted", err, res)
			}
			rep, err := Verify(ctx, st, pub)
			if err != nil {
				t.Fatal(err)
			}
			if c := rep.Chains[0]; !rep.OK() || c.Purged != 6 || c.Records != 4 || c.Checkpoints != 2 {
				t.Fatalf("after the purge: %+v, want records 7-10 verified from the checkpoint at 6", c)
			}
			if res, err := st.PurgeAuditRecords(ctx, store.AuditPurgePolicy{Before: t0.Add(7*time.Minute + 30*time.Second)}); err != nil ||
				res.Deleted["audit_records"]+res.Deleted["audit_checkpoints"] != 0 {
				t.Fatalf("second purge: %v %+v, want nothing deleted twice", err, res)
			}
			if _, err := db.ExecContext(ctx, `UPDATE audit_records SET record = REPLACE(record, '"index":8', '"index":1') WHERE writer = $1 AND seq = 8`, writer); err != nil {
				t.Fatal(err)
			}
			rehash(t, db, writer, 8)
			rep, err = Verify(ctx, st, pub)
			if err != nil {
				t.Fatal(err)
			}
			if p := rep.Chains[0].Problem; p == nil || p.Kind != Altered || p.Seq != 8 {
				t.Fatalf("record 8 altered after the gap: %v, want it named", p)
			}

			// Every record older: all go but the last checkpoint, which the
			// chain's count still answers to.
			whole := writeDatedChain(t, st, key, t0, 4, 2, 4)
			if _, err := st.PurgeAuditRecords(ctx, store.AuditPurgePolicy{Before: t0.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			rep, err = Verify(ctx, st, pub)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Chains {
				if c.Writer == whole && (c.Problem != nil || c.Purged != 4 || c.Records != 0 || c.Checkpoints != 1) {
					t.Fatalf("a chain purged whole: %+v", c)
				}
			}

			// A prefix deleted by hand up to the checkpoint at 6, leaving the
			// one at 3 a purge would have taken with it.
			forged := writeDatedChain(t, st, key, t0.Add(2*time.Hour), 8, 3, 6)
			if _, err := db.ExecContext(ctx, `DELETE FROM audit_records WHERE writer = $1 AND seq <= 6`, forged); err != nil {
				t.Fatal(err)
			}
			rep, err = Verify(ctx, st, pub)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Chains {
				if c.Writer == forged && (c.Problem == nil || c.Problem.Kind != Missing || c.Problem.Seq != 3) {
					t.Fatalf("a prefix deleted by hand: %+v, want it named missing", c)
				}
			}
		})
	}
}
