package evidence

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Fixed values of forgejo.pr-diff-evidence.v1. They are exported so that the
// test writer (evidencetest) and the Core emulator produce exactly what the
// verifier demands.
const (
	// Schema is the only accepted value of the top-level "schema" member.
	Schema = "forgejo.pr-diff-evidence.v1"
	// Profile is the only accepted generation.profile.
	Profile = "git-diff-binary.v1"
	// BaseSource is the only accepted generation.base.source: Core diffs from
	// the PR's stored merge base, never from a visible branch tip.
	BaseSource = "pull_request.merge_base"
	// MediaType is the only accepted content.media_type.
	MediaType = "text/x-diff"
	// ContentEncoding is the only accepted content.encoding.
	ContentEncoding = "base64"
	// ResolutionNotRead is the only accepted original_fork.resolution: the
	// fork is historical context, never read.
	ResolutionNotRead = "not_read"
	// StatusPresent and StatusMissing are the target_tip.status values;
	// target_tip.oid is null exactly when the status is StatusMissing.
	StatusPresent = "present"
	StatusMissing = "missing"
)

// Bounds of docs/architecture.md#streaming-and-memory.
const (
	// InputBufferSize is the one input buffer every entity byte passes through.
	InputBufferSize = 16 << 10
	// MaxWindow is the largest window a caller may ask for.
	MaxWindow = 32 << 10
	// MaxMetadataBytes caps every entity byte outside the "data" string's
	// contents; over it the entity is refused as evidence_metadata_too_large.
	MaxMetadataBytes = 64 << 10
)

// ErrOffsetBeyondEnd is the cause (errors.Is) of the cursor_stale error Verify
// returns when a fully verified entity is shorter than Request.Offset.
//
// A non-zero offset only comes from a cursor, and the caller must already have
// refused, as cursor_invalid and before any upstream request, a cursor whose
// offset exceeds its own bound byte count. An offset beyond the end of a
// freshly verified diff therefore means the diff changed under the cursor:
// the caller restarts without one, exactly as for any other bound field.
var ErrOffsetBeyondEnd = errors.New("evidence: requested offset is beyond the end of the verified diff")

// Request says which PR the caller asked for and which window it wants.
type Request struct {
	// Index is the requested PR index; pull_request.index must equal it.
	Index int64
	// Offset is the first byte of the window in the decoded diff.
	Offset int64
	// Window is the most bytes to return, 1..MaxWindow.
	Window int
}

// Verified is what a completely verified entity yields: nothing of it exists
// unless the whole entity passed every check.
type Verified struct {
	// Manifest is a compact JSON object holding every top-level member of the
	// entity except "data", members in the member order of
	// docs/architecture.md#evidence-entity at every level, values as received.
	Manifest json.RawMessage
	// Identity holds the parsed fields a cursor binds.
	Identity Identity
	// Offset is Request.Offset, kept so that the window can be placed.
	Offset int64
	// Window is the decoded diff bytes [Offset, Offset+len(Window)). It is
	// shorter than Request.Window only when it reaches the end of the diff.
	Window []byte
}

// Identity is the validated identity of the diff: the fields a continuation
// cursor binds, so that a later page can tell whether it still reads the same
// bytes from the same inputs.
type Identity struct {
	RepositoryID  int64
	PullRequestID int64
	Index         int64
	// Owner and Name are repository.owner and repository.name as received
	// (JSON-unescaped).
	Owner, Name string
	// ObjectFormat is "sha1" or "sha256".
	ObjectFormat     string
	BaseRepositoryID int64
	BaseOID          string
	BaseSource       string
	HeadRepositoryID int64
	HeadOID          string
	HeadRef          string
	Profile          string
	// ByteCount and SHA256 (lowercase hex) describe the whole decoded diff;
	// both were checked against the bytes actually received.
	ByteCount int64
	SHA256    string
}

// Verify reads one evidence entity from r to its end and checks all of it:
// strict JSON, the shape and identity rules of
// docs/architecture.md#evidence-entity, canonical base64, and the decoded
// byte count and SHA-256 against content. Only when every check passed after
// the final closing brace (and end of input) does it return the window at
// req.Offset; on any error the result is nil, never a partial window.
//
// Errors are *toolerr.Error: evidence_malformed, evidence_metadata_too_large,
// cursor_stale wrapping ErrOffsetBeyondEnd, invalid_arguments for a Request
// out of range, or a read failure (see the package documentation). Messages
// name what failed and never carry entity bytes other than member names.
func Verify(r io.Reader, req Request) (*Verified, error) {
	if req.Index < 1 || req.Offset < 0 || req.Window < 1 || req.Window > MaxWindow {
		return nil, toolerr.New(toolerr.InvalidArguments, "evidence request out of range")
	}
	p := newParser(r, req)
	if err := p.parseEntity(); err != nil {
		return nil, err
	}
	id, err := identityOf(p.values, req)
	if err != nil {
		return nil, err
	}
	if p.count != id.ByteCount {
		return nil, malformed("decoded byte count differs from content.byte_count")
	}
	if hex.EncodeToString(p.hash.Sum(nil)) != id.SHA256 {
		return nil, malformed("sha256 mismatch")
	}
	if req.Offset > id.ByteCount {
		return nil, toolerr.Wrap(ErrOffsetBeyondEnd, toolerr.CursorStale,
			"the cursor's offset is beyond the end of the current diff; restart without a cursor")
	}
	return &Verified{Manifest: manifestOf(p.values), Identity: id, Offset: req.Offset, Window: p.window.buf}, nil
}
