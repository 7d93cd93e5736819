package audit

import (
	"errors"
	"strconv"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/jsonwire"
)

// The canonical encoding is defined as encoding/json's output for Record
// (record.go); appendCanonical writes those bytes without reflection. The
// writer encodes every record of a batch into one buffer, where
// json.Marshal cost a fifth of a record's CPU and a dozen allocations.
// TestCanonicalMatchesEncodingJSON and FuzzCanonicalRecord hold the two
// byte for byte; a member added to Record must be added here too, and the
// differential test fails until it is.

// errYearOutOfRange is encoding/json's refusal of a time it cannot write
// as RFC 3339.
var errYearOutOfRange = errors.New("audit: encoding a record: the time's year is outside [0,9999]")

// appendCanonical appends r's canonical encoding to dst; At is written in
// UTC.
func (r *Record) appendCanonical(dst []byte) ([]byte, error) {
	at := r.At.UTC()
	if y := at.Year(); y < 0 || y > 9999 {
		return dst, errYearOutOfRange
	}
	o := object{b: append(dst, '{')}
	o.int("v", int64(r.V))
	o.str("writer", r.Writer)
	o.int("seq", r.Seq)
	o.str("prev", r.Prev)
	o.key("at")
	o.b = append(o.b, '"')
	o.b = at.AppendFormat(o.b, time.RFC3339Nano)
	o.b = append(o.b, '"')
	o.optStr("request_id", r.RequestID)
	o.optStr("trace_id", r.TraceID)
	o.key("principal")
	o.b = r.Principal.appendCanonical(o.b)
	o.optStr("address_key", r.AddressKey)
	o.optStr("transport", r.Transport)
	o.str("toolset", r.Toolset)
	o.str("tool", r.Tool)
	o.key("target")
	o.b = r.Target.appendCanonical(o.b)
	o.str("outcome", r.Outcome)
	o.key("evidence")
	o.b = r.Evidence.appendCanonical(o.b)
	return append(o.b, '}'), nil
}

func (p *Principal) appendCanonical(dst []byte) []byte {
	o := object{b: append(dst, '{')}
	o.str("kind", p.Kind)
	o.optStr("subject", p.Subject)
	o.optStr("client_id", p.ClientID)
	o.optStr("project_id", p.ProjectID)
	o.optStr("consent_id", p.ConsentID)
	o.optStr("fingerprint", p.Fingerprint)
	return append(o.b, '}')
}

func (t *Target) appendCanonical(dst []byte) []byte {
	o := object{b: append(dst, '{')}
	o.optStr("owner", t.Owner)
	o.optStr("repo", t.Repo)
	o.optInt("index", t.Index)
	o.optInt("grant_id", t.GrantID)
	o.optStr("request_key", t.RequestKey)
	o.optStr("source_id", t.SourceID)
	o.optStr("proposal_digest", t.ProposalDigest)
	return append(o.b, '}')
}

func (e *Evidence) appendCanonical(dst []byte) []byte {
	o := object{b: append(dst, '{')}
	o.optStr("result_sha256", e.ResultSHA256)
	if d := e.Diff; d != nil {
		o.key("diff")
		m := object{b: append(o.b, '{')}
		m.str("diff_sha256", d.DiffSHA256)
		m.int("diff_bytes", d.DiffBytes)
		m.str("base_oid", d.BaseOID)
		m.str("head_oid", d.HeadOID)
		m.int("byte_offset", d.ByteOffset)
		m.int("chunk_bytes", d.ChunkBytes)
		m.str("chunk_sha256", d.ChunkSHA256)
		o.b = append(m.b, '}')
	}
	if d := e.Document; d != nil {
		o.key("document")
		m := object{b: append(o.b, '{')}
		m.str("commit", d.Commit)
		m.str("path", d.Path)
		m.str("file_sha256", d.FileSHA256)
		m.int("start_byte", d.StartByte)
		m.int("end_byte", d.EndByte)
		m.str("fragment_sha256", d.FragmentSHA256)
		o.b = append(m.b, '}')
	}
	if g := e.Grant; g != nil {
		o.key("grant")
		m := object{b: append(o.b, '{')}
		m.int("native_status", int64(g.NativeStatus))
		m.optInt("issue_id", g.IssueID)
		m.optInt("issue_index", g.IssueIndex)
		o.b = append(m.b, '}')
	}
	return append(o.b, '}')
}

// object writes the members of one JSON object after its '{', a comma
// before each but the first, skipping an omitempty member that is empty
// as encoding/json does.
type object struct {
	b    []byte
	more bool
}

func (o *object) key(k string) {
	if o.more {
		o.b = append(o.b, ',')
	}
	o.more = true
	// The member names are fixed ASCII that needs no escape.
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *object) str(k, v string) {
	o.key(k)
	o.b = jsonwire.AppendString(o.b, v)
}

func (o *object) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *object) optStr(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

func (o *object) optInt(k string, v int64) {
	if v != 0 {
		o.int(k, v)
	}
}
