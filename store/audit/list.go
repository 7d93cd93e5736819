package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// Filter selects records for `admin audit list`: every member set must
// match (an empty member matches anything).
type Filter struct {
	// Subject is the OAuth subject; ClientID the OAuth client;
	// Fingerprint a Forgejo bearer's (or the stdio process's) keyed
	// fingerprint; Kind the principal kind.
	Subject, ClientID, Fingerprint, Kind string
	Tool                                 string
	// Owner and Repo name the target repository; Index its pull request
	// (0: any).
	Owner, Repo string
	Index       int64
	// Outcome is "ok", an error code, or "error" for every refusal.
	Outcome string
	// Since and Until bound the record's time: Since <= at < Until (zero:
	// unbounded).
	Since, Until time.Time
}

// Match reports whether r is selected.
func (f Filter) Match(r Record) bool {
	p := r.Principal
	switch {
	case f.Subject != "" && p.Subject != f.Subject,
		f.ClientID != "" && p.ClientID != f.ClientID,
		f.Fingerprint != "" && p.Fingerprint != f.Fingerprint,
		f.Kind != "" && p.Kind != f.Kind,
		f.Tool != "" && r.Tool != f.Tool,
		f.Owner != "" && !strings.EqualFold(r.Target.Owner, f.Owner),
		f.Repo != "" && !strings.EqualFold(r.Target.Repo, f.Repo),
		f.Index != 0 && r.Target.Index != f.Index,
		!f.Since.IsZero() && r.At.Before(f.Since),
		!f.Until.IsZero() && !r.At.Before(f.Until):
		return false
	}
	switch f.Outcome {
	case "":
		return true
	case "error":
		return r.Outcome != "ok"
	}
	return r.Outcome == f.Outcome
}

// Listed is one selected record with its place in its chain.
type Listed struct {
	Record Record
	Hash   string
}

// List returns the records of src that f selects, oldest first (by time,
// then writer and place), at most limit of them; more reports that
// records past the limit were left out. It reads every chain through, as
// Verify does: the store keeps a record as its canonical text, which only
// this package reads. A stored text that does not decode is an error: it
// is Verify's to name.
func List(ctx context.Context, src Source, f Filter, limit int) (out []Listed, more bool, err error) {
	writers, err := src.ListAuditWriters(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, w := range writers {
		found, cut, err := listChain(ctx, src, w, f, limit)
		if err != nil {
			return nil, false, err
		}
		out = append(out, found...)
		more = more || cut
	}
	slices.SortStableFunc(out, func(a, b Listed) int {
		return cmp.Or(a.Record.At.Compare(b.Record.At), cmp.Compare(a.Record.Writer, b.Record.Writer), cmp.Compare(a.Record.Seq, b.Record.Seq))
	})
	if limit > 0 && len(out) > limit {
		return out[:limit], true, nil
	}
	return out, more, nil
}

// listChain returns the records of one chain that f selects. A chain is
// in time order but for calls decided a moment apart and queued the other
// way round, so once it holds limit matches it reads on only until a
// record is later than all of them: what follows cannot be among the
// chain's oldest limit, and memory stays bounded by limit. cut reports
// that it stopped before the chain's end.
func listChain(ctx context.Context, src Source, writer string, f Filter, limit int) (out []Listed, cut bool, err error) {
	var latest time.Time
	after := int64(0)
	for {
		rows, err := src.ListAuditRecords(ctx, writer, after, store.MaxAuditBatch)
		if err != nil {
			return nil, false, err
		}
		for _, row := range rows {
			var r Record
			if err := json.Unmarshal([]byte(row.Record), &r); err != nil {
				return nil, false, fmt.Errorf("audit: record %s/%d does not decode (run admin audit verify): %w", row.Writer, row.Seq, err)
			}
			if limit > 0 && len(out) >= limit && r.At.After(latest) {
				return out, true, nil
			}
			if f.Match(r) {
				out = append(out, Listed{Record: r, Hash: row.Hash})
				if r.At.After(latest) {
					latest = r.At
				}
			}
			after = row.Seq
		}
		if len(rows) < store.MaxAuditBatch {
			return out, false, nil
		}
	}
}
