package evidence

import (
	"encoding/base64"
	"strconv"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// fields reads validated metadata values by path. The first failure sticks;
// later reads return zero values, so identityOf reads as a plain list of
// rules.
type fields struct {
	v   map[string]value
	err *toolerr.Error
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = malformed(format, args...)
	}
}

func (f *fields) str(path string) string { return f.v[path].str }

// is requires the string at path to equal want. The received value is never
// echoed.
func (f *fields) is(path, want string) string {
	s := f.str(path)
	if s != want {
		f.fail("%s must be %s", member(path), strconv.Quote(want))
	}
	return s
}

// positive parses a JSON integer ≥ 1 that fits int64: no sign, fraction,
// exponent or leading zero.
func (f *fields) positive(path string) int64 {
	n, ok := integer(f.v[path].raw)
	if !ok || n < 1 {
		f.fail("%s must be a positive integer", member(path))
	}
	return n
}

func (f *fields) nonNegative(path string) int64 {
	n, ok := integer(f.v[path].raw)
	if !ok {
		f.fail("%s must be a non-negative integer", member(path))
	}
	return n
}

func integer(raw []byte) (int64, bool) {
	for i, c := range raw {
		if !isDigit(c) || c == '0' && i == 0 && len(raw) > 1 {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

func (f *fields) nonEmpty(path string) string {
	s := f.str(path)
	if s == "" {
		f.fail("%s must not be empty", member(path))
	}
	return s
}

// oid requires a full lowercase hex object ID of the entity's object format.
func (f *fields) oid(path string, hexLen int) string {
	s := f.str(path)
	if !isLowerHex(s, hexLen) {
		f.fail("%s is not a full object ID of the object format", member(path))
	}
	return s
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (f *fields) timestamp(path string) {
	if _, err := time.Parse(time.RFC3339, f.str(path)); err != nil {
		f.fail("%s is not an RFC 3339 timestamp", member(path))
	}
}

// label requires canonical standard base64 (of any bytes, UTF-8 or not).
func (f *fields) label(path string) {
	s := f.str(path)
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		f.fail("%s is not canonical base64", member(path))
	}
}

func (f *fields) isNull(path string) bool { return f.v[path].tok == tokNull }

// identityOf applies the identity rules of
// docs/architecture.md#evidence-entity to the parsed metadata; shape and JSON
// types were already enforced by the parser.
func identityOf(v map[string]value, req Request) (Identity, error) {
	f := &fields{v: v}
	var id Identity
	f.is("schema", Schema)
	id.RepositoryID = f.positive("repository.id")
	id.Owner = f.nonEmpty("repository.owner")
	id.Name = f.nonEmpty("repository.name")
	id.PullRequestID = f.positive("pull_request.id")
	id.Index = f.positive("pull_request.index")
	if f.err == nil && id.Index != req.Index {
		f.fail("%s differs from the requested index", member("pull_request.index"))
	}

	id.ObjectFormat = f.str("object_format")
	hexLen := 0
	switch id.ObjectFormat {
	case "sha1":
		hexLen = 40
	case "sha256":
		hexLen = 64
	default:
		f.fail("%s must be \"sha1\" or \"sha256\"", member("object_format"))
	}

	id.Profile = f.is("generation.profile", Profile)
	id.BaseRepositoryID = f.positive("generation.base.repository_id")
	id.BaseOID = f.oid("generation.base.oid", hexLen)
	id.BaseSource = f.is("generation.base.source", BaseSource)
	id.HeadRepositoryID = f.positive("generation.head.repository_id")
	id.HeadOID = f.oid("generation.head.oid", hexLen)
	id.HeadRef = f.is("generation.head.ref", "refs/pull/"+strconv.FormatInt(req.Index, 10)+"/head")
	if f.err == nil && id.BaseRepositoryID != id.RepositoryID {
		f.fail("%s differs from repository.id", member("generation.base.repository_id"))
	}
	if f.err == nil && id.HeadRepositoryID != id.RepositoryID {
		f.fail("%s differs from repository.id", member("generation.head.repository_id"))
	}
	f.timestamp("generation.captured_at")
	f.timestamp("generation.generated_at")

	f.label("observations.target_tip.branch_b64")
	switch f.str("observations.target_tip.status") {
	case StatusPresent:
		if f.isNull("observations.target_tip.oid") {
			f.fail("%s is null but the status is present", member("observations.target_tip.oid"))
		}
		f.oid("observations.target_tip.oid", hexLen)
	case StatusMissing:
		if !f.isNull("observations.target_tip.oid") {
			f.fail("%s must be null when the status is missing", member("observations.target_tip.oid"))
		}
	default:
		f.fail("%s must be \"present\" or \"missing\"", member("observations.target_tip.status"))
	}
	f.timestamp("observations.target_tip.observed_at")

	if !f.isNull("observations.original_fork.repository_id") {
		f.positive("observations.original_fork.repository_id")
	}
	f.label("observations.original_fork.branch_b64")
	f.is("observations.original_fork.resolution", ResolutionNotRead)
	if f.v["observations.original_fork.generation_input"].tok != tokFalse {
		f.fail("%s must be false", member("observations.original_fork.generation_input"))
	}

	f.is("content.media_type", MediaType)
	f.is("content.encoding", ContentEncoding)
	id.ByteCount = f.nonNegative("content.byte_count")
	id.SHA256 = f.str("content.sha256")
	if !isLowerHex(id.SHA256, 64) {
		f.fail("%s must be 64 lowercase hex digits", member("content.sha256"))
	}

	if f.err != nil {
		return Identity{}, f.err
	}
	return id, nil
}
