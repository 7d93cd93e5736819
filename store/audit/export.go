package audit

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// exportLine is one line of an export (--format jsonl): a record, with its
// canonical text embedded unchanged as a JSON object, or a checkpoint.
type exportLine struct {
	Type      string          `json:"type"`
	Writer    string          `json:"writer"`
	Seq       int64           `json:"seq"`
	At        time.Time       `json:"at"`
	Hash      string          `json:"hash,omitempty"`
	Record    json.RawMessage `json:"record,omitempty"`
	Head      string          `json:"head,omitempty"`
	KeyID     string          `json:"key_id,omitempty"`
	Signature string          `json:"signature,omitempty"`
}

// Export writes every chain of src as JSON lines: each writer's records
// in chain order, then its checkpoints. The lines hold everything Verify
// needs, so an export verifies offline with only the public keys.
func Export(ctx context.Context, src Source, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	writers, err := src.ListAuditWriters(ctx)
	if err != nil {
		return err
	}
	for _, writer := range writers {
		after := int64(0)
		for {
			rows, err := src.ListAuditRecords(ctx, writer, after, store.MaxAuditBatch)
			if err != nil {
				return err
			}
			for _, r := range rows {
				if err := enc.Encode(exportLine{Type: "record", Writer: r.Writer, Seq: r.Seq, At: r.At, Hash: r.Hash, Record: json.RawMessage(r.Record)}); err != nil {
					return fmt.Errorf("audit export: record %s/%d: %w", r.Writer, r.Seq, err)
				}
				after = r.Seq
			}
			if len(rows) < store.MaxAuditBatch {
				break
			}
		}
		cps, err := src.ListAuditCheckpoints(ctx, writer)
		if err != nil {
			return err
		}
		for _, c := range cps {
			if err := enc.Encode(exportLine{Type: "checkpoint", Writer: c.Writer, Seq: c.Seq, At: c.At, Head: c.Head, KeyID: c.KeyID, Signature: c.Signature}); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// Export bounds: a line holds one record (a few hundred bytes to a few
// KiB), and an export read back is held in memory.
const (
	maxExportLine  = 1 << 20
	maxExportLines = 10_000_000
)

// ExportSource is an export read back: a Source for Verify.
type ExportSource struct {
	records     map[string][]store.AuditRow
	checkpoints map[string][]store.AuditCheckpoint
}

// ReadExport reads an export written by Export.
func ReadExport(r io.Reader) (*ExportSource, error) {
	s := &ExportSource{records: map[string][]store.AuditRow{}, checkpoints: map[string][]store.AuditCheckpoint{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxExportLine)
	n := 0
	for sc.Scan() {
		n++
		if n > maxExportLines {
			return nil, fmt.Errorf("audit export: more than %d lines", maxExportLines)
		}
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("audit export: line %d: %w", n, err)
		}
		switch l.Type {
		case "record":
			s.records[l.Writer] = append(s.records[l.Writer], store.AuditRow{Writer: l.Writer, Seq: l.Seq, At: l.At, Record: string(l.Record), Hash: l.Hash})
		case "checkpoint":
			s.checkpoints[l.Writer] = append(s.checkpoints[l.Writer], store.AuditCheckpoint{Writer: l.Writer, Seq: l.Seq, Head: l.Head, At: l.At, KeyID: l.KeyID, Signature: l.Signature})
		default:
			return nil, fmt.Errorf("audit export: line %d: unknown type %q", n, l.Type)
		}
	}
	for _, rows := range s.records {
		slices.SortStableFunc(rows, func(a, b store.AuditRow) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("audit export: line %d is over %d bytes", n+1, maxExportLine)
		}
		return nil, fmt.Errorf("audit export: %w", err)
	}
	return s, nil
}

// ListAuditWriters implements Source.
func (s *ExportSource) ListAuditWriters(context.Context) ([]string, error) {
	seen := map[string]bool{}
	for w := range s.records {
		seen[w] = true
	}
	for w := range s.checkpoints {
		seen[w] = true
	}
	out := make([]string, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	sort.Strings(out)
	return out, nil
}

// ListAuditRecords implements Source: rows in seq order (each line's
// "seq", its place in the chain, as the store's seq column is), so that a
// line moved to another place is verified as such.
func (s *ExportSource) ListAuditRecords(_ context.Context, writer string, afterSeq int64, limit int) ([]store.AuditRow, error) {
	rows := s.records[writer]
	start, _ := slices.BinarySearchFunc(rows, afterSeq+1, func(r store.AuditRow, seq int64) int { return cmp.Compare(r.Seq, seq) })
	end := min(start+limit, len(rows))
	return rows[start:end], nil
}

// ListAuditCheckpoints implements Source.
func (s *ExportSource) ListAuditCheckpoints(_ context.Context, writer string) ([]store.AuditCheckpoint, error) {
	return s.checkpoints[writer], nil
}
