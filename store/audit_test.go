package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// auditRows are n rows of writer from seq first on, each row's text its
// own.
func auditRows(writer string, first int64, n int) []store.AuditRow {
	at := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	rows := make([]store.AuditRow, n)
	for i := range rows {
		seq := first + int64(i)
		rows[i] = store.AuditRow{Writer: writer, Seq: seq, At: at.Add(time.Duration(seq) * time.Microsecond),
			Record: fmt.Sprintf(`{"seq":%d,"text":"é \u2028 ' \" %d"}`, seq, seq), Hash: fmt.Sprintf("%064x", seq)}
	}
	return rows
}

// TestAppendAuditRecordsBatchSizes: a batch is inserted in statements of
// many rows and then one row at a time; every size around the statement's
// width reads back exactly, in order, on both stores.
func TestAppendAuditRecordsBatchSizes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		var want []store.AuditRow
		next := int64(1)
		for _, n := range []int{1, 31, 32, 33, 64, 65, 257, store.MaxAuditBatch} {
			rows := auditRows("w_sizes", next, n)
			if err := s.AppendAuditRecords(ctx, rows); err != nil {
				t.Fatalf("%d rows: %v", n, err)
			}
			want, next = append(want, rows...), next+int64(n)
		}
		var got []store.AuditRow
		for after := int64(0); ; {
			page, err := s.ListAuditRecords(ctx, "w_sizes", after, store.MaxAuditBatch)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			got, after = append(got, page...), page[len(page)-1].Seq
		}
		if len(got) != len(want) {
			t.Fatalf("read back %d rows, want %d", len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Writer != w.Writer || g.Seq != w.Seq || !g.At.Equal(w.At) || g.Record != w.Record || g.Hash != w.Hash {
				t.Fatalf("row %d: %+v, want %+v", i, g, w)
			}
		}
	})
}

// TestAppendAuditRecordsAllOrNone: a batch with a row that exists is
// ErrConflict and leaves none of its rows, whichever statement of the
// batch met the conflict; a batch over MaxAuditBatch is refused.
func TestAppendAuditRecordsAllOrNone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		if err := s.AppendAuditRecords(ctx, auditRows("w_conflict", 70, 1)); err != nil {
			t.Fatal(err)
		}
		// Seq 70 in the third statement of many rows (1–96), in the
		// single-row tail after two of them (1–80), and in a batch of
		// single rows only (69–70).
		for _, batch := range [][]store.AuditRow{auditRows("w_conflict", 1, 96), auditRows("w_conflict", 1, 80), auditRows("w_conflict", 69, 2)} {
			if err := s.AppendAuditRecords(ctx, batch); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("a batch of %d rows with an existing seq: %v, want ErrConflict", len(batch), err)
			}
		}
		got, err := s.ListAuditRecords(ctx, "w_conflict", 0, store.MaxAuditBatch)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Seq != 70 {
			t.Fatalf("after the refused batches the writer has %d rows, want only seq 70", len(got))
		}
		if err := s.AppendAuditRecords(ctx, auditRows("w_big", 1, store.MaxAuditBatch+1)); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("a batch over MaxAuditBatch: %v, want ErrInvalid", err)
		}
	})
}
