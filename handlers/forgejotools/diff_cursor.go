package forgejotools

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// MaxCursorBytes bounds a cursor argument: a longer one is cursor_invalid
// before any upstream request (docs/architecture.md#diff-cursor: the cursor
// must fit the bounded metadata envelope). The gateway's own cursors stay
// under 1 KiB.
const MaxCursorBytes = 4096

// cursorPrefix names the cursor's kind and version; a new format gets a
// new prefix, and every other prefix is cursor_invalid.
const cursorPrefix = "prdiff1."

// cursorChecksumBytes is how much of the SHA-256 the checksum keeps:
// enough that a damaged or edited cursor is caught, short enough to leave
// the page budget to the diff.
const cursorChecksumBytes = 16

// cursorChecksumDomain separates the cursor checksum from any other
// SHA-256 of the same bytes.
const cursorChecksumDomain = "agent-gateway get_pull_request_diff cursor v1\n"

// DiffCursor is the continuation hint of get_pull_request_diff. It is
// opaque to callers and deliberately not secret: the checksum catches
// damage and accidental edits, not forgery, because a cursor grants
// nothing. Every page is read with the current caller's credential and
// Forgejo's permission checks, and a continuation only proceeds when the
// freshly verified diff has exactly the identity the cursor binds; any
// authorized caller may therefore use any cursor
// (docs/architecture.md#diff-cursor).
//
// The wire form is "prdiff1." + base64url(JSON) + "." +
// base64url(first 16 bytes of SHA-256(domain ‖ JSON)), unpadded.
type DiffCursor struct {
	// Owner, Repo and Index are the request the cursor continues; a call
	// with another request refuses the cursor (cursor_invalid).
	Owner string `json:"owner"`
	Repo  string `json:"repo"`
	Index int64  `json:"index"`
	// The identity of the diff the cursor continues: a continuation whose
	// fresh evidence differs in any of these is cursor_stale.
	RepositoryID  int64           `json:"repository_id"`
	PullRequestID int64           `json:"pull_request_id"`
	ObjectFormat  string          `json:"object_format"`
	Base          DiffCursorInput `json:"base"`
	Head          DiffCursorInput `json:"head"`
	Profile       string          `json:"profile"`
	ByteCount     int64           `json:"byte_count"`
	SHA256        string          `json:"sha256"`
	// Offset is the next byte to read: 0 < Offset < ByteCount, since no
	// cursor is issued at the end of a diff.
	Offset int64 `json:"offset"`
}

// DiffCursorInput is one generation input: its repository, its OID and
// where it came from (base: source; head: ref).
type DiffCursorInput struct {
	RepositoryID int64  `json:"repository_id"`
	OID          string `json:"oid"`
	Source       string `json:"source,omitempty"`
	Ref          string `json:"ref,omitempty"`
}

// newDiffCursor binds a verified identity, as requested by owner/repo, at
// the next offset.
func newDiffCursor(owner, repo string, id evidence.Identity, next int64) DiffCursor {
	return DiffCursor{
		Owner: owner, Repo: repo, Index: id.Index,
		RepositoryID: id.RepositoryID, PullRequestID: id.PullRequestID, ObjectFormat: id.ObjectFormat,
		Base:    DiffCursorInput{RepositoryID: id.BaseRepositoryID, OID: id.BaseOID, Source: id.BaseSource},
		Head:    DiffCursorInput{RepositoryID: id.HeadRepositoryID, OID: id.HeadOID, Ref: id.HeadRef},
		Profile: id.Profile, ByteCount: id.ByteCount, SHA256: id.SHA256, Offset: next,
	}
}

// Encode returns the cursor's wire form.
func (c DiffCursor) Encode() string {
	payload, err := json.Marshal(c)
	if err != nil {
		panic("forgejotools: a cursor of plain fields cannot fail to encode: " + err.Error())
	}
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." +
		base64.RawURLEncoding.EncodeToString(cursorChecksum(payload))
}

func cursorChecksum(payload []byte) []byte {
	h := sha256.New()
	h.Write([]byte(cursorChecksumDomain))
	h.Write(payload)
	return h.Sum(nil)[:cursorChecksumBytes]
}

// DecodeDiffCursor parses and checks a cursor on its own (not yet against
// a call). Anything but a cursor this gateway could have issued is
// cursor_invalid: too long, another prefix, non-canonical base64url, a
// checksum that does not match, JSON that is not exactly what Encode
// writes (unknown or repeated members, other spelling), or values out of
// range (IDs, OIDs of the object format, the fixed source, ref and profile,
// 0 < offset < byte_count).
func DecodeDiffCursor(s string) (DiffCursor, error) {
	var c DiffCursor
	if len(s) > MaxCursorBytes {
		return c, cursorInvalid("the cursor is longer than %d bytes", MaxCursorBytes)
	}
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return c, cursorInvalid("not a get_pull_request_diff cursor of this version")
	}
	p64, sum64, ok := strings.Cut(rest, ".")
	if !ok {
		return c, cursorInvalid("the cursor is malformed")
	}
	payload, err1 := decodeRawURL(p64)
	sum, err2 := decodeRawURL(sum64)
	if err1 != nil || err2 != nil {
		return c, cursorInvalid("the cursor is malformed")
	}
	if !bytes.Equal(sum, cursorChecksum(payload)) {
		return c, cursorInvalid("the cursor's checksum does not match; it was damaged or changed")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return DiffCursor{}, cursorInvalid("the cursor is malformed")
	}
	if canon, err := json.Marshal(c); err != nil || !bytes.Equal(canon, payload) {
		return DiffCursor{}, cursorInvalid("the cursor is malformed")
	}
	if msg := c.check(); msg != "" {
		return DiffCursor{}, cursorInvalid("%s", msg)
	}
	return c, nil
}

// decodeRawURL decodes canonical unpadded base64url only.
func decodeRawURL(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(b) != s {
		return nil, errCursorEncoding
	}
	return b, nil
}

var errCursorEncoding = errors.New("non-canonical base64url")

var (
	nameRe   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	sha1Re   = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// check returns why a decoded cursor could not have been issued, or "".
func (c DiffCursor) check() string {
	oid := sha1Re
	switch c.ObjectFormat {
	case "sha1":
	case "sha256":
		oid = sha256Re
	default:
		return "the cursor's object format is unknown"
	}
	switch {
	case !nameRe.MatchString(c.Owner) || !nameRe.MatchString(c.Repo) || c.Index < 1:
		return "the cursor's request is invalid"
	case c.RepositoryID < 1 || c.PullRequestID < 1 || c.Base.RepositoryID < 1 || c.Head.RepositoryID < 1:
		return "the cursor's IDs are invalid"
	case !oid.MatchString(c.Base.OID) || !oid.MatchString(c.Head.OID):
		return "the cursor's OIDs do not match its object format"
	case c.Base.Source != evidence.BaseSource || c.Base.Ref != "" ||
		c.Head.Ref != "refs/pull/"+strconv.FormatInt(c.Index, 10)+"/head" || c.Head.Source != "":
		return "the cursor's generation inputs are invalid"
	case c.Profile != evidence.Profile:
		return "the cursor's generation profile is unknown"
	case !sha256Re.MatchString(c.SHA256):
		return "the cursor's SHA-256 is invalid"
	case c.Offset < 1 || c.Offset >= c.ByteCount:
		return "the cursor's offset is outside its diff"
	}
	return ""
}

// matches reports whether the cursor continues this call's request. Owner
// and repository names compare without regard to case, as Forgejo
// resolves them.
func (c DiffCursor) matches(owner, repo string, index int64) bool {
	return strings.EqualFold(c.Owner, owner) && strings.EqualFold(c.Repo, repo) && c.Index == index
}

// sameDiff reports whether a freshly verified identity is the diff the
// cursor binds: every bound field equal.
func (c DiffCursor) sameDiff(id evidence.Identity) bool {
	fresh := newDiffCursor(c.Owner, c.Repo, id, c.Offset)
	return fresh == c
}

func cursorInvalid(format string, args ...any) *toolerr.Error {
	return toolerr.New(toolerr.CursorInvalid, format, args...)
}
