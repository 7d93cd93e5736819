package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// reference is the canonical encoding by its definition: encoding/json's
// output for the record with At in UTC.
func reference(r Record) ([]byte, error) {
	r.At = r.At.UTC()
	return json.Marshal(r)
}

// checkCanonical fails t unless Encode writes what reference writes, or
// both refuse.
func checkCanonical(t *testing.T, name string, r Record) {
	t.Helper()
	want, wantErr := reference(r)
	got, err := r.Encode()
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, encoding/json's %v", name, err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

// full is a record with every member set.
func full() Record {
	return Record{
		V: Version, Writer: "w_0123456789abcdef", Seq: 42, Prev: strings.Repeat("a", 64),
		At:        time.Date(2026, 12, 3, 5, 51, 18, 123456000, time.UTC),
		RequestID: "req-1", TraceID: strings.Repeat("f", 32),
		Principal:  Principal{Kind: KindOAuth, Subject: "alice", ClientID: "c1", ProjectID: "p1", ConsentID: "k1", Fingerprint: strings.Repeat("b", 64)},
		AddressKey: "127.0.0.1", Transport: "stdio", Toolset: "agent-gateway-forgejo", Tool: "get_pull_request_diff",
		Target:  Target{Owner: "o", Repo: "r", Index: 7, GrantID: 9, RequestKey: "rk", SourceID: "s1", ProposalDigest: strings.Repeat("c", 64)},
		Outcome: "ok",
		Evidence: Evidence{
			ResultSHA256: strings.Repeat("d", 64),
			Diff:         &DiffEvidence{DiffSHA256: "x", DiffBytes: 1 << 40, BaseOID: "b", HeadOID: "h", ByteOffset: 36000, ChunkBytes: 12, ChunkSHA256: "y"},
			Document:     &DocumentEvidence{Commit: "c", Path: "docs/<a>&b.md", FileSHA256: "f", StartByte: 1, EndByte: 2, FragmentSHA256: "g"},
			Grant:        &GrantEvidence{NativeStatus: 201, IssueID: 5, IssueIndex: 3},
		},
	}
}

// TestCanonicalMatchesEncodingJSON holds the hand encoder to encoding/json
// on the zero record, a full one, each optional member left out, the
// escapes strings can need, the times RFC 3339 writes differently, and
// the years encoding/json refuses.
func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	cases := map[string]Record{"zero year 1": {}, "full": full()}
	empty := map[string]func(*Record){
		"no request id":  func(r *Record) { r.RequestID = "" },
		"no trace id":    func(r *Record) { r.TraceID = "" },
		"no address":     func(r *Record) { r.AddressKey = "" },
		"no transport":   func(r *Record) { r.Transport = "" },
		"bare principal": func(r *Record) { r.Principal = Principal{Kind: KindAnonymous} },
		"empty target":   func(r *Record) { r.Target = Target{} },
		"no index":       func(r *Record) { r.Target.Index = 0 },
		"empty evidence": func(r *Record) { r.Evidence = Evidence{} },
		"diff only":      func(r *Record) { r.Evidence = Evidence{Diff: &DiffEvidence{}} },
		"document only":  func(r *Record) { r.Evidence = Evidence{Document: &DocumentEvidence{}} },
		"grant only":     func(r *Record) { r.Evidence = Evidence{Grant: &GrantEvidence{}} },
		"negatives":      func(r *Record) { r.V, r.Seq, r.Target.Index, r.Evidence.Grant.IssueID = -1, -2, -3, -4 },
		"escapes": func(r *Record) {
			r.RequestID, r.Target.Owner, r.Principal.Subject = "\"\\<>&\x00\b\f\n\r\t\x1f\x7f", "\xff\xfe é \u2028\u2029 😀", "\xe2\x80"
		},
		"whole nanoseconds": func(r *Record) { r.At = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		"trailing zeros":    func(r *Record) { r.At = time.Date(2026, 1, 2, 3, 4, 5, 100, time.UTC) },
		"nanoseconds":       func(r *Record) { r.At = time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.UTC) },
		"another zone":      func(r *Record) { r.At = time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", -9*3600-30*60)) },
		"local monotonic":   func(r *Record) { r.At = time.Now() },
		"year 0":            func(r *Record) { r.At = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) },
		"year 9999":         func(r *Record) { r.At = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC) },
		"year 10000":        func(r *Record) { r.At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"year -1":           func(r *Record) { r.At = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	for name, change := range empty {
		r := full()
		change(&r)
		cases[name] = r
	}
	for name, r := range cases {
		checkCanonical(t, name, r)
	}
	if _, err := (Record{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}).Encode(); err == nil {
		t.Error("a record of year 10000 encoded")
	}
}

// FuzzCanonicalRecord: for any strings, numbers and times, and any of the
// evidence members present, the hand encoder writes encoding/json's bytes
// (or both refuse).
func FuzzCanonicalRecord(f *testing.F) {
	f.Add("w_1", "alice", "o", "r", "\"<&>\u2028\xff", int64(7), int64(1764740000), uint8(7))
	f.Add("", "", "", "", "", int64(0), int64(0), uint8(0))
	f.Add("x", "y", "z", "\x00", "é", int64(-1), int64(-62167219201), uint8(5))
	f.Add("y10k", "", "", "", "", int64(999999999), int64(253402300800), uint8(2))
	f.Fuzz(func(t *testing.T, a, b, c, d, e string, n, unixSec int64, present uint8) {
		r := Record{V: int(n % 3), Writer: a, Seq: n, Prev: b, At: time.Unix(unixSec, n%1e9).In(time.FixedZone("z", int(n%50000))),
			RequestID: c, TraceID: d, Principal: Principal{Kind: e, Subject: a, Fingerprint: d},
			AddressKey: b, Transport: c, Toolset: d, Tool: e, Outcome: a,
			Target:   Target{Owner: b, Repo: c, Index: n, GrantID: -n, RequestKey: d, SourceID: e, ProposalDigest: a},
			Evidence: Evidence{ResultSHA256: e}}
		if present&1 != 0 {
			r.Evidence.Diff = &DiffEvidence{DiffSHA256: a, DiffBytes: n, BaseOID: b, HeadOID: c, ByteOffset: -n, ChunkBytes: n / 2, ChunkSHA256: d}
		}
		if present&2 != 0 {
			r.Evidence.Document = &DocumentEvidence{Commit: e, Path: d, FileSHA256: c, StartByte: n, EndByte: n + 1, FragmentSHA256: b}
		}
		if present&4 != 0 {
			r.Evidence.Grant = &GrantEvidence{NativeStatus: int(n % 1000), IssueID: n, IssueIndex: n % 5}
		}
		checkCanonical(t, "fuzzed", r)
	})
}
