// Package evidencetest writes forgejo.pr-diff-evidence.v1 entities for tests
// and for the Core emulator: the canonical entity, streamed from a diff of
// any size in constant memory, and every fault the verifier must refuse.
//
// Identity faults (wrong IDs, index, ref, object format, OIDs, statuses) are
// made by setting Entity fields; type and shape faults by the options
// Override, Remove, Duplicate and Extra; base64, hash and framing faults by
// the other options. Len gives the exact entity length for an Entity and a
// set of options, so that a server can send a true Content-Length before it
// streams the body.
package evidencetest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"time"
)

// DefaultTime replaces zero timestamps, so that entities are deterministic.
var DefaultTime = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

// Entity holds the values of one entity's metadata. The writer spells them
// out in the shape of docs/architecture.md#evidence-entity; nothing here is
// validated, so any of them can be made wrong on purpose.
type Entity struct {
	RepositoryID  int64
	Owner, Name   string
	PullRequestID int64
	Index         int64
	// ObjectFormat is "sha1" when empty.
	ObjectFormat     string
	BaseRepositoryID int64
	BaseOID          string
	HeadRepositoryID int64
	HeadOID          string
	// HeadRef is "refs/pull/<Index>/head" when empty.
	HeadRef string
	// CapturedAt and GeneratedAt are DefaultTime when zero.
	CapturedAt, GeneratedAt time.Time

	// TargetBranch is the raw bytes of the target branch name (written as
	// base64, so it may be non-UTF-8).
	TargetBranch []byte
	// TargetOID is written as null when empty.
	TargetOID string
	// TargetStatus is "present" when empty and TargetOID is set, else
	// "missing".
	TargetStatus string
	// TargetObservedAt is DefaultTime when zero.
	TargetObservedAt time.Time
	// ForkRepositoryID is written as null when zero (a deleted fork).
	ForkRepositoryID int64
	ForkBranch       []byte

	// ByteCount and SHA256 (lowercase hex) describe the diff the writer will
	// be given: the writer checks them against the stream it reads. Use
	// WithDiff or Digest to fill them.
	ByteCount int64
	SHA256    string
}

// Sample returns a valid sha1 entity for PR 7 of repository 42 (team/project)
// with an empty diff; tests change what they need.
func Sample() Entity {
	return Entity{
		RepositoryID:     42,
		Owner:            "team",
		Name:             "project",
		PullRequestID:    1001,
		Index:            7,
		ObjectFormat:     "sha1",
		BaseRepositoryID: 42,
		BaseOID:          "6b26cfedad09a0b41a4e2c1f3d5b7a9c0e8f6d4b",
		HeadRepositoryID: 42,
		HeadOID:          "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f60718293",
		TargetBranch:     []byte("main"),
		TargetOID:        "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
		ForkRepositoryID: 77,
		ForkBranch:       []byte("feature"),
	}.WithDiff(nil)
}

// WithDiff returns e with ByteCount and SHA256 describing diff.
func (e Entity) WithDiff(diff []byte) Entity {
	sum := sha256.Sum256(diff)
	e.ByteCount = int64(len(diff))
	e.SHA256 = hex.EncodeToString(sum[:])
	return e
}

// Digest reads r to its end and returns its length and lowercase hex
// SHA-256: the first pass a streaming server makes before it can announce
// byte_count, sha256 and Content-Length.
func Digest(r io.Reader) (byteCount int64, sha256Hex string, err error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func (e Entity) headRef() string {
	if e.HeadRef != "" {
		return e.HeadRef
	}
	return "refs/pull/" + strconv.FormatInt(e.Index, 10) + "/head"
}

func (e Entity) objectFormat() string {
	if e.ObjectFormat != "" {
		return e.ObjectFormat
	}
	return "sha1"
}

func (e Entity) targetStatus() string {
	switch {
	case e.TargetStatus != "":
		return e.TargetStatus
	case e.TargetOID != "":
		return "present"
	default:
		return "missing"
	}
}

func timestamp(t time.Time) time.Time {
	if t.IsZero() {
		return DefaultTime
	}
	return t
}
