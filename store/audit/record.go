// Package audit is the gateway's record of who was shown what
// (docs/audit.md): one record per authenticated tool call,
// naming the caller, the tool, its target, the outcome and the identity of
// the evidence answered (hashes, offsets and lengths, never content bytes
// and never a credential). Records form a hash chain per writer (one
// writer per gateway process); at a fixed interval the writer signs its
// chain head with an Ed25519 key, and Verify names the first record that
// was altered, removed or moved.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Version is the record format; it is part of every record, so a later
// format can be told apart without guessing.
const Version = 1

// zeroHash is the predecessor hash of a writer's first record.
var zeroHash = hex.EncodeToString(make([]byte, sha256.Size))

// Record is one audit record. Its canonical encoding is encoding/json's
// output for this struct (members in declaration order, no insignificant
// space), and that exact text is what the chain hashes and the store
// keeps.
type Record struct {
	V int `json:"v"`
	// Writer and Seq place the record in its chain: Seq counts from 1
	// per writer. Prev is the SHA-256 (hex) of the predecessor's canonical
	// encoding, 64 zeros for the first record.
	Writer string `json:"writer"`
	Seq    int64  `json:"seq"`
	Prev   string `json:"prev"`
	// At is when the call's answer was decided (UTC).
	At         time.Time `json:"at"`
	RequestID  string    `json:"request_id,omitempty"`
	TraceID    string    `json:"trace_id,omitempty"`
	Principal  Principal `json:"principal"`
	AddressKey string    `json:"address_key,omitempty"`
	// Transport is "stdio" for a call over `agent-gateway stdio` (whose
	// RequestID is then the JSON-RPC id), empty over HTTP.
	Transport string `json:"transport,omitempty"`
	Toolset   string `json:"toolset"`
	Tool      string `json:"tool"`
	Target    Target `json:"target"`
	// Outcome is "ok" or the stable error code answered.
	Outcome  string   `json:"outcome"`
	Evidence Evidence `json:"evidence"`
}

// The principal kinds of a record.
const (
	KindOAuth         = "oauth"
	KindLegacyToken   = "legacy_token"
	KindForgejoBearer = "forgejo_bearer"
	KindProcess       = "process"
	KindAnonymous     = "anonymous"
)

// Principal is who called, without any credential: an OAuth consent's
// subject, client, project and consent; for a Forgejo bearer (or the
// stdio process's own credential) only Fingerprint, an HMAC-SHA256 of the
// credential under the data directory's fingerprint secret, so that one
// bearer's calls can be grouped without the record holding the token or a
// plain hash of it.
type Principal struct {
	Kind        string `json:"kind"`
	Subject     string `json:"subject,omitempty"`
	ClientID    string `json:"client_id,omitempty"`
	ProjectID   string `json:"project_id,omitempty"`
	ConsentID   string `json:"consent_id,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Target is what the call named, from its arguments: a repository and
// pull request, a work grant and request key, or a document source.
type Target struct {
	Owner      string `json:"owner,omitempty"`
	Repo       string `json:"repo,omitempty"`
	Index      int64  `json:"index,omitempty"`
	GrantID    int64  `json:"grant_id,omitempty"`
	RequestKey string `json:"request_key,omitempty"`
	SourceID   string `json:"source_id,omitempty"`
	// ProposalDigest is the digest a grant write confirmed or submitted
	// under.
	ProposalDigest string `json:"proposal_digest,omitempty"`
}

// Evidence is the identity of what was answered. ResultSHA256 is the
// SHA-256 of the result text exactly as answered (every successful call);
// Diff and Document are set by the tools that serve verified pages.
type Evidence struct {
	ResultSHA256 string            `json:"result_sha256,omitempty"`
	Diff         *DiffEvidence     `json:"diff,omitempty"`
	Document     *DocumentEvidence `json:"document,omitempty"`
	Grant        *GrantEvidence    `json:"grant,omitempty"`
}

// DiffEvidence identifies one get_pull_request_diff page: the whole diff
// it is part of (the verified manifest's SHA-256 and byte count, and its
// input pair) and the chunk answered.
type DiffEvidence struct {
	DiffSHA256  string `json:"diff_sha256"`
	DiffBytes   int64  `json:"diff_bytes"`
	BaseOID     string `json:"base_oid"`
	HeadOID     string `json:"head_oid"`
	ByteOffset  int64  `json:"byte_offset"`
	ChunkBytes  int64  `json:"chunk_bytes"`
	ChunkSHA256 string `json:"chunk_sha256"`
}

// DocumentEvidence identifies one git_document_get fragment.
type DocumentEvidence struct {
	Commit         string `json:"commit"`
	Path           string `json:"path"`
	FileSHA256     string `json:"file_sha256"`
	StartByte      int64  `json:"start_byte"`
	EndByte        int64  `json:"end_byte"`
	FragmentSHA256 string `json:"fragment_sha256"`
}

// GrantEvidence identifies the outcome of a work-grant write or
// submission readback: Forgejo's native status and, for a submission, the
// Issue it created (ID and index, 0 when none). The proposal digest is the
// target's.
type GrantEvidence struct {
	NativeStatus int   `json:"native_status"`
	IssueID      int64 `json:"issue_id,omitempty"`
	IssueIndex   int64 `json:"issue_index,omitempty"`
}

// Encode returns the record's canonical encoding (appendCanonical,
// encode.go).
func (r Record) Encode() ([]byte, error) { return r.appendCanonical(nil) }

// Hash is the chain hash of a canonical encoding: SHA-256, lowercase hex.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hexString(&sum)
}

// hexString is a SHA-256 in lowercase hex, encoded on the stack: one
// allocation, where hex.EncodeToString makes two. A record takes three.
func hexString(sum *[sha256.Size]byte) string {
	var b [2 * sha256.Size]byte
	hex.Encode(b[:], sum[:])
	return string(b[:])
}

// SHA256Hex is the lowercase hex SHA-256 of b, the form every evidence
// hash takes.
func SHA256Hex(b []byte) string { return Hash(b) }
