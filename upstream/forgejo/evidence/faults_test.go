package evidence_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// fault is one way to break an entity and the refusal it must earn.
type fault struct {
	name string
	edit func(*et.Entity)
	opts []et.Option
	msg  string // substring of the evidence_malformed message
}

func o(opts ...et.Option) []et.Option { return opts }

// faults are built for a diff of diffLen bytes (not a multiple of 3, so the
// base64 is padded); late faults sit after the requested window.
const diffLen = 50000

var sha256OID = strings.Repeat("cd", 32)

var faults = []fault{
	// Duplicates, at every level, "data" included.
	{name: "duplicate content", opts: o(et.Duplicate("content")), msg: `duplicate member "content"`},
	{name: "duplicate schema", opts: o(et.Duplicate("schema")), msg: `duplicate member "schema"`},
	{name: "duplicate nested scalar", opts: o(et.Duplicate("generation.head.oid")), msg: `duplicate member "generation.head.oid"`},
	{name: "duplicate nested object", opts: o(et.Duplicate("observations.original_fork")), msg: `duplicate member "observations.original_fork"`},
	{name: "duplicate data", opts: o(et.Duplicate("data")), msg: `duplicate member "data"`},
	{name: "duplicate data, data first", opts: o(et.DataFirst(), et.Duplicate("data")), msg: `duplicate member "data"`},
	{name: "duplicate content sha256", opts: o(et.DataFirst(), et.Duplicate("content.sha256")), msg: `duplicate member "content.sha256"`},

	// Unknown and missing members.
	{name: "unknown top-level member", opts: o(et.Extra("")), msg: `unknown member "x_unknown"`},
	{name: "unknown nested member", opts: o(et.Extra("repository")), msg: `unknown member "repository.x_unknown"`},
	{name: "unknown deep member", opts: o(et.Extra("observations.target_tip")), msg: `unknown member "observations.target_tip.x_unknown"`},
	{name: "missing content", opts: o(et.Remove("content")), msg: `missing member "content"`},
	{name: "missing data", opts: o(et.Remove("data")), msg: `missing member "data"`},
	{name: "missing head ref", opts: o(et.Remove("generation.head.ref")), msg: `missing member "generation.head.ref"`},
	{name: "missing fork repository id", opts: o(et.Remove("observations.original_fork.repository_id")), msg: `missing member "observations.original_fork.repository_id"`},

	// JSON types and numbers.
	{name: "data null", opts: o(et.Override("data", "null")), msg: `member "data" must be a string`},
	{name: "data number", opts: o(et.Override("data", "0")), msg: `member "data" must be a string`},
	{name: "repository array", opts: o(et.Override("repository", "[]")), msg: `member "repository" must be an object`},
	{name: "repository null", opts: o(et.Override("repository", "null")), msg: `member "repository" must be an object`},
	{name: "id string", opts: o(et.Override("repository.id", `"42"`)), msg: `member "repository.id" must be a number`},
	{name: "id array", opts: o(et.Override("repository.id", `[42]`)), msg: `member "repository.id" must be a number`},
	{name: "id boolean", opts: o(et.Override("repository.id", `true`)), msg: `member "repository.id" must be a number`},
	{name: "id null", opts: o(et.Override("pull_request.id", `null`)), msg: `member "pull_request.id" must be a number`},
	{name: "id fraction", opts: o(et.Override("repository.id", "42.0")), msg: `"repository.id" must be a positive integer`},
	{name: "id exponent", opts: o(et.Override("repository.id", "4.2e1")), msg: `"repository.id" must be a positive integer`},
	{name: "id exponent integer", opts: o(et.Override("pull_request.id", "1E3")), msg: `"pull_request.id" must be a positive integer`},
	{name: "id negative", opts: o(et.Override("repository.id", "-42")), msg: `"repository.id" must be a positive integer`},
	{name: "id zero", opts: o(et.Override("pull_request.id", "0")), msg: `"pull_request.id" must be a positive integer`},
	{name: "id negative zero", opts: o(et.Override("pull_request.id", "-0")), msg: `"pull_request.id" must be a positive integer`},
	{name: "id leading zero", opts: o(et.Override("repository.id", "042")), msg: `expected ',' or '}' after member "repository.id"`},
	{name: "id overflow", opts: o(et.Override("pull_request.id", "9223372036854775808")), msg: `"pull_request.id" must be a positive integer`},
	{name: "id bad number", opts: o(et.Override("pull_request.id", "-")), msg: `invalid JSON number for member "pull_request.id"`},
	{name: "id dot without digits", opts: o(et.Override("pull_request.id", "1.")), msg: `invalid JSON number for member "pull_request.id"`},
	{name: "id bad literal", opts: o(et.Override("pull_request.id", "nul")), msg: `invalid JSON literal for member "pull_request.id"`},
	{name: "id NaN", opts: o(et.Override("pull_request.id", "NaN")), msg: `invalid JSON value for member "pull_request.id"`},
	{name: "generation_input string", opts: o(et.Override("observations.original_fork.generation_input", `"false"`)), msg: `"observations.original_fork.generation_input" must be a boolean`},
	{name: "generation_input true", opts: o(et.Override("observations.original_fork.generation_input", `true`)), msg: `"observations.original_fork.generation_input" must be false`},
	{name: "byte_count negative", opts: o(et.Override("content.byte_count", "-1")), msg: `"content.byte_count" must be a non-negative integer`},
	{name: "byte_count fraction", opts: o(et.Override("content.byte_count", "50000.0")), msg: `"content.byte_count" must be a non-negative integer`},

	// Strings.
	{name: "invalid UTF-8", opts: o(et.Override("repository.name", "\"pr\xffject\"")), msg: `invalid UTF-8 in member "repository.name"`},
	{name: "overlong UTF-8", opts: o(et.Override("repository.name", "\"\xc0\xaf\"")), msg: `invalid UTF-8 in member "repository.name"`},
	{name: "control character", opts: o(et.Override("repository.name", "\"a\tb\"")), msg: `control character in member "repository.name"`},
	{name: "lone high surrogate", opts: o(et.Override("repository.owner", `"\ud800x"`)), msg: `invalid Unicode escape in member "repository.owner"`},
	{name: "lone low surrogate", opts: o(et.Override("repository.owner", `"\udc00"`)), msg: `invalid Unicode escape in member "repository.owner"`},
	{name: "bad escape", opts: o(et.Override("repository.owner", `"\x41"`)), msg: `invalid escape in member "repository.owner"`},
	{name: "bad hex escape", opts: o(et.Override("repository.owner", `"\u00g1"`)), msg: `invalid Unicode escape in member "repository.owner"`},
	{name: "empty owner", opts: o(et.Override("repository.owner", `""`)), msg: `"repository.owner" must not be empty`},
	{name: "empty name", opts: o(et.Override("repository.name", `""`)), msg: `"repository.name" must not be empty`},

	// Identity and provenance.
	{name: "schema v2", opts: o(et.Override("schema", `"forgejo.pr-diff-evidence.v2"`)), msg: `"schema" must be "forgejo.pr-diff-evidence.v1"`},
	{name: "profile", opts: o(et.Override("generation.profile", `"git-diff.v1"`)), msg: `"generation.profile" must be`},
	{name: "wrong index", edit: func(e *et.Entity) { e.Index = 8 }, msg: `"pull_request.index" differs from the requested index`},
	{name: "wrong index only", opts: o(et.Override("pull_request.index", "8")), msg: `"pull_request.index" differs from the requested index`},
	{name: "wrong head ref", edit: func(e *et.Entity) { e.HeadRef = "refs/heads/main" }, msg: `"generation.head.ref" must be "refs/pull/7/head"`},
	{name: "head ref of another PR", edit: func(e *et.Entity) { e.HeadRef = "refs/pull/70/head" }, msg: `"generation.head.ref" must be`},
	{name: "base source", opts: o(et.Override("generation.base.source", `"pull_request.base_branch"`)), msg: `"generation.base.source" must be "pull_request.merge_base"`},
	{name: "base repository moved", edit: func(e *et.Entity) { e.BaseRepositoryID = 43 }, msg: `"generation.base.repository_id" differs from repository.id`},
	{name: "head from fork", edit: func(e *et.Entity) { e.HeadRepositoryID = 77 }, msg: `"generation.head.repository_id" differs from repository.id`},
	{name: "object format unknown", edit: func(e *et.Entity) { e.ObjectFormat = "SHA1" }, msg: `"object_format" must be "sha1" or "sha256"`},
	{name: "object format mismatch", edit: func(e *et.Entity) { e.ObjectFormat = "sha256" }, msg: `"generation.base.oid" is not a full object ID`},
	{name: "sha256 OIDs for sha1", edit: func(e *et.Entity) { e.BaseOID, e.HeadOID = sha256OID, sha256OID }, msg: `"generation.base.oid" is not a full object ID`},
	{name: "uppercase OID", edit: func(e *et.Entity) { e.HeadOID = strings.ToUpper(e.HeadOID) }, msg: `"generation.head.oid" is not a full object ID`},
	{name: "short OID", edit: func(e *et.Entity) { e.HeadOID = e.HeadOID[:39] }, msg: `"generation.head.oid" is not a full object ID`},
	{name: "target OID of wrong format", edit: func(e *et.Entity) { e.TargetOID = sha256OID }, msg: `"observations.target_tip.oid" is not a full object ID`},
	{name: "target present without OID", edit: func(e *et.Entity) { e.TargetOID, e.TargetStatus = "", "present" }, msg: `"observations.target_tip.oid" is null but the status is present`},
	{name: "target missing with OID", edit: func(e *et.Entity) { e.TargetStatus = "missing" }, msg: `"observations.target_tip.oid" must be null when the status is missing`},
	{name: "target status unknown", edit: func(e *et.Entity) { e.TargetStatus = "stale" }, msg: `"observations.target_tip.status" must be "present" or "missing"`},
	{name: "fork id zero", opts: o(et.Override("observations.original_fork.repository_id", "0")), msg: `"observations.original_fork.repository_id" must be a positive integer`},
	{name: "fork resolution", opts: o(et.Override("observations.original_fork.resolution", `"read"`)), msg: `"observations.original_fork.resolution" must be "not_read"`},
	{name: "label unpadded", opts: o(et.Override("observations.target_tip.branch_b64", `"bWFpbg"`)), msg: `"observations.target_tip.branch_b64" is not canonical base64`},
	{name: "label pad bits", opts: o(et.Override("observations.target_tip.branch_b64", `"bWFpbh=="`)), msg: `"observations.target_tip.branch_b64" is not canonical base64`},
	{name: "label escaped newline", opts: o(et.Override("observations.original_fork.branch_b64", `"ZmVh\ndHVyZQ=="`)), msg: `"observations.original_fork.branch_b64" is not canonical base64`},
	{name: "label URL alphabet", opts: o(et.Override("observations.original_fork.branch_b64", `"-_-_"`)), msg: `"observations.original_fork.branch_b64" is not canonical base64`},
	{name: "timestamp", opts: o(et.Override("generation.captured_at", `"2026-11-29 21:00:00"`)), msg: `"generation.captured_at" is not an RFC 3339 timestamp`},
	{name: "timestamp date only", opts: o(et.Override("observations.target_tip.observed_at", `"2026-11-29"`)), msg: `"observations.target_tip.observed_at" is not an RFC 3339 timestamp`},
	{name: "media type", opts: o(et.Override("content.media_type", `"text/plain"`)), msg: `"content.media_type" must be "text/x-diff"`},
	{name: "encoding", opts: o(et.Override("content.encoding", `"base64url"`)), msg: `"content.encoding" must be "base64"`},
	{name: "sha256 uppercase", opts: o(et.Override("content.sha256", `"`+strings.Repeat("AB", 32)+`"`)), msg: `"content.sha256" must be 64 lowercase hex digits`},
	{name: "sha256 short", opts: o(et.Override("content.sha256", `"abcd"`)), msg: `"content.sha256" must be 64 lowercase hex digits`},

	// Count and hash.
	{name: "wrong whole hash", opts: o(et.WrongSHA256()), msg: "sha256 mismatch"},
	{name: "wrong whole hash, data first", opts: o(et.DataFirst(), et.WrongSHA256()), msg: "sha256 mismatch"},
	{name: "wrong byte count", opts: o(et.WrongByteCount()), msg: "decoded byte count differs"},
	{name: "late corruption", opts: o(et.CorruptByteAt(diffLen - 2)), msg: "sha256 mismatch"},
	{name: "corrupt first byte", opts: o(et.CorruptByteAt(0)), msg: "sha256 mismatch"},

	// Canonical base64.
	{name: "late invalid character", opts: o(et.InvalidCharAt(diffLen - 2)), msg: `invalid base64 character inside member "data"`},
	{name: "escaped character", opts: o(et.EscapedCharAt(30000)), msg: `JSON escape inside member "data"`},
	{name: "line breaks", opts: o(et.LineBreaks()), msg: `JSON escape inside member "data"`},
	{name: "URL alphabet", opts: o(et.URLAlphabet()), msg: `URL-safe base64 alphabet inside member "data"`},
	{name: "non-zero pad bits", opts: o(et.NonZeroPadBits()), msg: "non-zero base64 pad bits"},
	{name: "non-zero pad bits, data first", opts: o(et.DataFirst(), et.NonZeroPadBits()), msg: "non-zero base64 pad bits"},
	{name: "padding dropped", opts: o(et.BadPadding()), msg: "non-canonical base64 padding"},

	// Framing of the JSON text.
	{name: "trailing byte", opts: o(et.Trailing("x")), msg: "trailing bytes after the entity"},
	{name: "trailing NUL after newline", opts: o(et.Trailing("\n\x00")), msg: "trailing bytes after the entity"},
	{name: "second object", opts: o(et.Trailing(" {}")), msg: "trailing bytes after the entity"},
	{name: "truncated in data", opts: o(et.TruncateTo(40000)), msg: `truncated entity in member "data"`},
	{name: "truncated before closing brace", opts: o(et.TruncateBy(1)), msg: "truncated entity in metadata"},
	{name: "truncated inside the last member", opts: o(et.DataFirst(), et.TruncateBy(30)), msg: "truncated entity in metadata"},
	{name: "truncated at the data quote", opts: o(et.TruncateBy(2)), msg: `truncated entity in member "data"`},
	{name: "truncated before the data quote", opts: o(et.TruncateBy(3)), msg: `truncated entity in member "data"`},
	{name: "truncated in metadata", opts: o(et.TruncateTo(200)), msg: "truncated entity in metadata"},
	{name: "truncated at start", opts: o(et.TruncateTo(0)), msg: "truncated entity"},
}

func TestVerifyFaults(t *testing.T) {
	diff := randomDiff(diffLen, 7)
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			e := et.Sample().WithDiff(diff)
			if f.edit != nil {
				f.edit(&e)
			}
			entity := entityFor(t, e, diff, f)
			for _, req := range []evidence.Request{req7(0, 100), req7(diffLen-10, 10)} {
				v, err := evidence.Verify(bytes.NewReader(entity), req)
				wantRefusal(t, v, err, toolerr.EvidenceMalformed, f.msg)
			}
		})
	}
}

func entityFor(t *testing.T, e et.Entity, diff []byte, f fault) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := et.Write(&b, e, bytes.NewReader(diff), f.opts...); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
