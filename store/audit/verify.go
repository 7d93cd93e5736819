package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/agent-gateway/agent-gateway/store"
)

// Source is what Verify reads: the store, or an export read back
// (ReadExport).
type Source interface {
	ListAuditWriters(ctx context.Context) ([]string, error)
	ListAuditRecords(ctx context.Context, writer string, afterSeq int64, limit int) ([]store.AuditRow, error)
	ListAuditCheckpoints(ctx context.Context, writer string) ([]store.AuditCheckpoint, error)
}

// The kinds of Problem.
const (
	// Altered: a record's text no longer hashes to what the chain or a
	// signed checkpoint says it was.
	Altered = "altered"
	// Missing: a record is absent from its place in the chain.
	Missing = "missing"
	// Reordered: a record is stored at another place than it was written.
	Reordered = "reordered"
	// BadCheckpoint: a checkpoint whose signature does not verify, or
	// whose key is not trusted.
	BadCheckpoint = "checkpoint"
)

// Problem is the first thing wrong with one chain.
type Problem struct {
	Kind string `json:"kind"`
	// Seq is the record (or, for BadCheckpoint, the checkpoint) named.
	Seq    int64  `json:"seq"`
	Detail string `json:"detail"`
}

func (p Problem) String() string { return fmt.Sprintf("record %d %s: %s", p.Seq, p.Kind, p.Detail) }

// ChainReport is what Verify found of one writer's chain.
type ChainReport struct {
	Writer      string `json:"writer"`
	Records     int64  `json:"records"`
	Checkpoints int    `json:"checkpoints"`
	// Purged is the last record of the prefix a purge removed (records 1
	// to Purged), 0 when the chain starts at record 1. The chain's records
	// continue from the signed checkpoint the purge kept at Purged.
	Purged  int64    `json:"purged,omitempty"`
	Problem *Problem `json:"problem,omitempty"`
}

// Report is Verify's answer, one entry per chain.
type Report struct {
	Chains []ChainReport `json:"chains"`
}

// OK reports whether every chain verified.
func (r Report) OK() bool {
	for _, c := range r.Chains {
		if c.Problem != nil {
			return false
		}
	}
	return true
}

// Verify checks every chain in src: each record's hash, its place
// (writer and seq as written, no gap), its link to its predecessor, and
// every checkpoint's signature (by one of keys) and head. It names the
// first problem of each chain. An error is a failure to read, not a
// finding.
func Verify(ctx context.Context, src Source, keys []ed25519.PublicKey) (Report, error) {
	trusted := map[string]ed25519.PublicKey{}
	for _, k := range keys {
		trusted[KeyID(k)] = k
	}
	writers, err := src.ListAuditWriters(ctx)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Chains: []ChainReport{}}
	for _, w := range writers {
		c, err := verifyChain(ctx, src, w, trusted)
		if err != nil {
			return Report{}, err
		}
		rep.Chains = append(rep.Chains, c)
	}
	return rep, nil
}

// verifyChain checks one writer's chain.
func verifyChain(ctx context.Context, src Source, writer string, trusted map[string]ed25519.PublicKey) (ChainReport, error) {
	rep := ChainReport{Writer: writer}
	cps, err := src.ListAuditCheckpoints(ctx, writer)
	if err != nil {
		return rep, err
	}
	rep.Checkpoints = len(cps)
	// Signatures first: a checkpoint that does not verify cannot vouch
	// for the records.
	heads := map[int64]string{}
	var firstSigned, lastSigned int64
	for _, cp := range cps {
		pub, ok := trusted[cp.KeyID]
		switch {
		case !ok:
			rep.Problem = &Problem{Kind: BadCheckpoint, Seq: cp.Seq, Detail: "checkpoint signed by key " + cp.KeyID + ", which is not trusted"}
			return rep, nil
		case !checkSignature(pub, cp):
			rep.Problem = &Problem{Kind: BadCheckpoint, Seq: cp.Seq, Detail: "checkpoint signature does not verify: the checkpoint was altered"}
			return rep, nil
		}
		heads[cp.Seq] = cp.Head
		lastSigned = max(lastSigned, cp.Seq)
		if firstSigned == 0 || cp.Seq < firstSigned {
			firstSigned = cp.Seq
		}
	}
	want, prev := int64(1), zeroHash
	after := int64(0)
	for {
		rows, err := src.ListAuditRecords(ctx, writer, after, store.MaxAuditBatch)
		if err != nil {
			return rep, err
		}
		if after == 0 {
			// A purged chain starts after the checkpoint its purge kept: its
			// signed head is the predecessor hash of the first record left.
			// With no record left, the last checkpoint is that anchor.
			start := lastSigned
			if len(rows) > 0 {
				start = rows[0].Seq - 1
			}
			if head, ok := heads[start]; ok && start > 0 {
				// A purge deletes the checkpoints before the one it keeps
				// in the same transaction: one left below it means the
				// records were deleted some other way.
				if firstSigned < start {
					rep.Problem = &Problem{Kind: Missing, Seq: firstSigned, Detail: fmt.Sprintf(
						"records 1 to %d are missing, but not purged: the checkpoint at %d, which a purge to %d would have removed, is still stored", start, firstSigned, start)}
					return rep, nil
				}
				want, prev, rep.Purged = start+1, head, start
			}
		}
		for _, row := range rows {
			if p := checkRow(writer, row, want, prev, heads); p != nil {
				rep.Problem = p
				return rep, nil
			}
			rep.Records++
			want, prev, after = row.Seq+1, row.Hash, row.Seq
		}
		if len(rows) < store.MaxAuditBatch {
			break
		}
	}
	if want <= lastSigned {
		rep.Problem = &Problem{Kind: Missing, Seq: want, Detail: fmt.Sprintf("records %d to %d are missing: a signed checkpoint counts %d", want, lastSigned, lastSigned)}
	}
	return rep, nil
}

// checkRow checks one stored row at the place want follows prev.
func checkRow(writer string, row store.AuditRow, want int64, prev string, heads map[int64]string) *Problem {
	var rec Record
	dec := json.NewDecoder(bytes.NewReader([]byte(row.Record)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return &Problem{Kind: Altered, Seq: row.Seq, Detail: "the record is not a valid audit record"}
	}
	if Hash([]byte(row.Record)) != row.Hash {
		return &Problem{Kind: Altered, Seq: row.Seq, Detail: "the record does not hash to its stored hash"}
	}
	if rec.Writer != writer || rec.Seq != row.Seq {
		if rec.Writer == writer {
			return &Problem{Kind: Reordered, Seq: row.Seq, Detail: fmt.Sprintf("place %d holds record %d", row.Seq, rec.Seq)}
		}
		return &Problem{Kind: Reordered, Seq: row.Seq, Detail: "the record was written by writer " + rec.Writer}
	}
	if row.Seq > want {
		return &Problem{Kind: Missing, Seq: want, Detail: fmt.Sprintf("records %d to %d are missing", want, row.Seq-1)}
	}
	if rec.Prev != prev {
		// The row itself is intact (its hash matches its text), so the
		// predecessor changed after this record was chained to it.
		return &Problem{Kind: Altered, Seq: row.Seq - 1, Detail: fmt.Sprintf("record %d no longer hashes to the predecessor hash record %d carries", row.Seq-1, row.Seq)}
	}
	if head, ok := heads[row.Seq]; ok && head != row.Hash {
		return &Problem{Kind: Altered, Seq: row.Seq, Detail: "the record differs from the one a signed checkpoint names"}
	}
	return nil
}
