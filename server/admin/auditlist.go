package admin

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/store/audit"
)

// defaultAuditListLimit bounds `admin audit list` unless --limit says
// otherwise: a store keeps millions of records.
const defaultAuditListLimit = 1000

// auditListFlags declares the filters of `admin audit list` on fs and
// returns the function that reads them once parsed.
func auditListFlags(fs *flag.FlagSet) func() (audit.Filter, int, error) {
	var f audit.Filter
	fs.StringVar(&f.Subject, "subject", "", "only calls of this OAuth subject")
	fs.StringVar(&f.ClientID, "client-id", "", "only calls of this OAuth client")
	fs.StringVar(&f.Fingerprint, "fingerprint", "", "only calls of the Forgejo bearer (or stdio credential) with this fingerprint")
	fs.StringVar(&f.Kind, "principal-kind", "", "only calls of this principal kind: oauth, legacy_token, forgejo_bearer, process, anonymous")
	fs.StringVar(&f.Tool, "tool", "", "only calls of this tool")
	repo := fs.String("repository", "", "only calls on this repository, OWNER/NAME")
	fs.Int64Var(&f.Index, "index", 0, "only calls on this pull request index (with --repository)")
	fs.StringVar(&f.Outcome, "outcome", "", "only calls with this outcome: ok, an error code, or error for every refusal")
	since := fs.String("since", "", "only calls at or after this time (RFC 3339, or a duration such as 24h meaning that long ago)")
	until := fs.String("until", "", "only calls before this time (RFC 3339, or a duration meaning that long ago)")
	limit := fs.Int("limit", defaultAuditListLimit, "print at most this many records, oldest first")
	return func() (audit.Filter, int, error) {
		if *repo != "" {
			owner, name, ok := strings.Cut(*repo, "/")
			if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
				return f, 0, &UsageError{Msg: fmt.Sprintf("--repository %q: want OWNER/NAME", *repo)}
			}
			f.Owner, f.Repo = owner, name
		}
		if f.Index < 0 {
			return f, 0, &UsageError{Msg: "--index must be a positive integer"}
		}
		if *limit <= 0 {
			return f, 0, &UsageError{Msg: "--limit must be a positive integer"}
		}
		var err error
		if f.Since, err = auditTime("since", *since); err != nil {
			return f, 0, err
		}
		if f.Until, err = auditTime("until", *until); err != nil {
			return f, 0, err
		}
		return f, *limit, nil
	}
}

// auditTime parses --since or --until: RFC 3339, or a duration ago.
func auditTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, &UsageError{Msg: fmt.Sprintf("--%s %q: want an RFC 3339 time or a positive duration such as 24h", name, v)}
}

// listAuditRecords prints the records f selects, in the shape of the
// other list commands (one block of fields each, or a JSON array).
func listAuditRecords(ctx context.Context, a *adminRun, errOut io.Writer, f audit.Filter, limit int) error {
	found, more, err := audit.List(ctx, a.st, f, limit)
	if err != nil {
		return err
	}
	if err := a.printList(records(found, auditFields)); err != nil {
		return err
	}
	if more {
		fmt.Fprintf(errOut, "more records may match: narrow the filters or raise --limit (%d)\n", limit)
	}
	return nil
}

// auditFields are the printed members of one record: who, what, the
// outcome and the identity of what was answered; its chain place and
// hash, to find it again in an export.
func auditFields(l audit.Listed) []field {
	r := l.Record
	target := ""
	if r.Target.Owner != "" || r.Target.Repo != "" {
		target = r.Target.Owner + "/" + r.Target.Repo
		if r.Target.Index != 0 {
			target += fmt.Sprintf("#%d", r.Target.Index)
		}
	}
	if r.Target.GrantID != 0 {
		target = strings.TrimSpace(target + fmt.Sprintf(" grant %d", r.Target.GrantID))
	}
	if r.Target.SourceID != "" {
		target = strings.TrimSpace(target + " source " + r.Target.SourceID)
	}
	p := r.Principal
	return []field{
		{"at", r.At.UTC().Format(time.RFC3339Nano)}, {"writer", r.Writer}, {"seq", r.Seq}, {"hash", l.Hash},
		{"request_id", optString(r.RequestID)}, {"transport", optString(r.Transport)},
		{"principal_kind", p.Kind}, {"subject", optString(p.Subject)}, {"client_id", optString(p.ClientID)},
		{"project_id", optString(p.ProjectID)}, {"fingerprint", optString(p.Fingerprint)},
		{"address_key", optString(r.AddressKey)}, {"tool", r.Tool}, {"target", optString(target)},
		{"outcome", r.Outcome}, {"evidence", evidenceField(r.Evidence)},
	}
}

// evidenceField is a record's evidence: its members in JSON (--json),
// one line for people (String).
type evidenceField audit.Evidence

// String says which bytes were answered, on one line.
func (f evidenceField) String() string {
	e := audit.Evidence(f)
	var parts []string
	if d := e.Diff; d != nil {
		parts = append(parts, fmt.Sprintf("diff %s (%d bytes, %s..%s) range [%d,%d) chunk %s",
			d.DiffSHA256, d.DiffBytes, d.BaseOID, d.HeadOID, d.ByteOffset, d.ByteOffset+d.ChunkBytes, d.ChunkSHA256))
	}
	if d := e.Document; d != nil {
		parts = append(parts, fmt.Sprintf("document %s@%s file %s range [%d,%d) fragment %s",
			d.Path, d.Commit, d.FileSHA256, d.StartByte, d.EndByte, d.FragmentSHA256))
	}
	if g := e.Grant; g != nil {
		s := fmt.Sprintf("grant native status %d", g.NativeStatus)
		if g.IssueID != 0 {
			s += fmt.Sprintf(" issue %d (#%d)", g.IssueID, g.IssueIndex)
		}
		parts = append(parts, s)
	}
	if e.ResultSHA256 != "" {
		parts = append(parts, "result "+e.ResultSHA256)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
