package documents

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Cursor bounds and defaults.
const (
	// MaxCursorBytes is the longest cursor accepted; longer is refused
	// before anything is looked up.
	MaxCursorBytes = 4096
	// DefaultCursorTTL is how long a cursor stays valid.
	DefaultCursorTTL = 15 * time.Minute
	// MinSecretBytes is the shortest signing secret accepted.
	MinSecretBytes = 32

	cursorVersion = 1
	macBytes      = sha256.Size
)

// cursorDomain separates the MAC of document cursors from any other use of
// the same secret.
var cursorDomain = []byte("agent-gateway/documents/cursor\x00")

// CursorClaims is what a document cursor binds: the tenant, the principal,
// the source and the exact file version it was issued for, the next byte
// offset, and an expiry. The path is bound by its SHA-256, so long paths do
// not make long cursors: Sign reads Path, Verify returns the digest only.
type CursorClaims struct {
	ProjectID string
	Principal string // the principal's key, e.g. "grant:grt_…"
	SourceID  string
	Commit    string
	Path      string
	Offset    int64
	Expires   time.Time

	pathDigest string
}

// wireCursor is the signed payload: short member names keep cursors compact.
type wireCursor struct {
	Project   string `json:"p"`
	Principal string `json:"u"`
	Source    string `json:"s"`
	Commit    string `json:"c"`
	PathHash  string `json:"h"`
	Offset    int64  `json:"o"`
	Expires   int64  `json:"e"`
}

// Cursors signs and verifies document cursors with HMAC-SHA256. A cursor
// is base64url(version ‖ JSON payload ‖ MAC): opaque to callers, verified
// in constant time, and useless to anyone but the principal it was issued
// to.
type Cursors struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// NewCursors returns a signer. The secret must have at least
// MinSecretBytes; ttl 0 means DefaultCursorTTL.
func NewCursors(secret []byte, ttl time.Duration) (*Cursors, error) {
	if len(secret) < MinSecretBytes {
		return nil, errors.New("cursor secret: want at least 32 bytes")
	}
	if ttl <= 0 {
		ttl = DefaultCursorTTL
	}
	return &Cursors{secret: bytes.Clone(secret), ttl: ttl, now: time.Now}, nil
}

func pathHash(p string) string {
	sum := sha256.Sum256([]byte(p))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (c *Cursors) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.secret)
	m.Write(cursorDomain)
	m.Write(payload)
	return m.Sum(nil)
}

// Sign issues a cursor for claims, expiring TTL from now (claims.Expires is
// ignored).
func (c *Cursors) Sign(cl CursorClaims) string {
	payload, _ := json.Marshal(wireCursor{
		Project: cl.ProjectID, Principal: cl.Principal, Source: cl.SourceID, Commit: cl.Commit,
		PathHash: pathHash(cl.Path), Offset: cl.Offset, Expires: c.now().Add(c.ttl).Unix(),
	})
	raw := append([]byte{cursorVersion}, payload...)
	raw = append(raw, c.mac(raw)...)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// invalid is the one refusal of a cursor that is not genuine, not current
// or not the caller's; the message says which without revealing more.
func invalid(why string) *toolerr.Error {
	return toolerr.New(toolerr.CursorInvalid, "the cursor is %s; start again without a cursor", why).With("argument", "cursor")
}

// Verify checks a cursor's form, signature and expiry, and returns what
// it binds. Whether the claims match the caller and the source is the
// caller's check (Matches).
func (c *Cursors) Verify(token string) (CursorClaims, error) {
	if len(token) > MaxCursorBytes {
		return CursorClaims{}, invalid("longer than 4096 bytes")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) < 1+macBytes+2 || raw[0] != cursorVersion {
		return CursorClaims{}, invalid("not a cursor of this gateway")
	}
	body, sig := raw[:len(raw)-macBytes], raw[len(raw)-macBytes:]
	if !hmac.Equal(sig, c.mac(body)) {
		return CursorClaims{}, invalid("not a cursor of this gateway")
	}
	var w wireCursor
	dec := json.NewDecoder(bytes.NewReader(body[1:]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil || w.Offset < 0 {
		return CursorClaims{}, invalid("not a cursor of this gateway")
	}
	if !c.now().Before(time.Unix(w.Expires, 0)) {
		return CursorClaims{}, invalid("expired")
	}
	return CursorClaims{
		ProjectID: w.Project, Principal: w.Principal, SourceID: w.Source, Commit: w.Commit,
		Offset: w.Offset, Expires: time.Unix(w.Expires, 0), pathDigest: w.PathHash,
	}, nil
}

// boundTo reports whether verified claims were issued to this principal in
// this project for this source (the path compared by hash).
func (cl CursorClaims) boundTo(projectID, principal, sourceID string) bool {
	return cl.ProjectID == projectID && cl.Principal == principal && cl.SourceID == sourceID
}

// sameVersion reports whether verified claims name this commit and path.
func (cl CursorClaims) sameVersion(commit, path string) bool {
	return cl.Commit == commit && cl.pathDigest == pathHash(path)
}
