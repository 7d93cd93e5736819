package diffread

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Contract values every page carries (docs/architecture.md#evidence-entity).
const (
	contract = "observed_input_range"
	encoding = "base64"
)

// Verifier checks the pages of one diff in order and writes each page's
// bytes to its writer once the page passed. It keeps the diff's identity,
// the bytes assembled so far and a running SHA-256: constant memory,
// whatever the diff's size. Use it directly to read pages over another
// transport; Read drives one over MCP.
type Verifier struct {
	// MaxBytes, when positive, is the longest diff the verifier reads: a
	// first page whose manifest states a longer one is refused
	// (BoundMaxBytes) before any byte is written, and no page may end
	// past the stated length, so no more than MaxBytes are ever written.
	MaxBytes int64

	target   Target
	w        io.Writer
	pages    int
	offset   int64
	sum      hash.Hash
	identity string         // canonical form of idTree
	idTree   map[string]any // the first page's manifest without observations
	manifest *Manifest
	done     bool
}

// NewVerifier returns a verifier of target's diff that writes verified
// bytes to w.
func NewVerifier(target Target, w io.Writer) *Verifier {
	return &Verifier{target: target, w: w, sum: sha256.New()}
}

// Pages returns how many pages passed.
func (v *Verifier) Pages() int { return v.pages }

// Offset returns how many verified bytes were written.
func (v *Verifier) Offset() int64 { return v.offset }

// ByteCount returns the diff's length as its manifest states it, or -1
// before the first page.
func (v *Verifier) ByteCount() int64 {
	if v.manifest == nil {
		return -1
	}
	return v.manifest.Content.ByteCount
}

// Done reports whether the last page (eof) passed.
func (v *Verifier) Done() bool { return v.done }

// fail returns a VerificationError of the page being checked.
func (v *Verifier) fail(c Check, expected, got string) error {
	return &VerificationError{Page: v.pages + 1, Offset: v.offset, Check: c, Expected: expected, Got: got}
}

// refuse returns a BoundError of the page being checked.
func (v *Verifier) refuse(b Bound, format string, a ...any) error {
	return &BoundError{Page: v.pages + 1, Offset: v.offset, Bound: b, Detail: fmt.Sprintf(format, a...)}
}

// Add checks the next page and, when it passes, writes its bytes. A page
// after the last one is refused. A page outside the reader's bounds (its
// manifest not exactly the contract's, its offsets not advancing from
// where the previous page ended, a diff over MaxBytes) is a *BoundError;
// a page that fails a check of what it carries is a *VerificationError.
// An error writing the bytes is returned as it is.
func (v *Verifier) Add(p *Page) error {
	if v.done {
		return v.fail(CheckEOF, "no page after eof", "another page")
	}
	if err := v.checkIdentity(p); err != nil {
		return err
	}
	if p.Contract != contract || p.AtomicLatestPRSnapshot || p.Encoding != encoding {
		return v.fail(CheckContract,
			fmt.Sprintf("contract %q, atomic_latest_pr_snapshot false, encoding %q", contract, encoding),
			fmt.Sprintf("contract %q, atomic_latest_pr_snapshot %v, encoding %q", p.Contract, p.AtomicLatestPRSnapshot, p.Encoding))
	}
	if !p.WholeDiffVerified {
		return v.fail(CheckWholeDiffVerified, "true", "false")
	}
	if err := v.checkProgress(p); err != nil {
		return err
	}
	chunk, err := base64.StdEncoding.Strict().DecodeString(p.Data)
	if err != nil || base64.StdEncoding.EncodeToString(chunk) != p.Data {
		return v.fail(CheckData, "canonical standard base64", fmt.Sprintf("%d characters that are not", len(p.Data)))
	}
	if int64(len(chunk)) != p.ChunkBytes {
		return v.fail(CheckChunkBytes, fmt.Sprintf("%d (the decoded data)", len(chunk)), strconv.FormatInt(p.ChunkBytes, 10))
	}
	sum := sha256.Sum256(chunk)
	if got := hex.EncodeToString(sum[:]); got != p.ChunkSHA256 {
		return v.fail(CheckChunkSHA256, got+" (of the decoded data)", p.ChunkSHA256)
	}
	if err := v.checkText(p, chunk); err != nil {
		return err
	}
	if err := v.checkEnd(p); err != nil {
		return err
	}
	if _, err := v.w.Write(chunk); err != nil {
		return fmt.Errorf("write the diff: %w", err)
	}
	v.sum.Write(chunk)
	v.offset += p.ChunkBytes
	v.pages++
	v.done = p.EOF
	return nil
}

// checkIdentity checks that the page is of the pull request asked for and
// that its manifest names the same diff as the first page's: repository,
// pull request, object format, generation inputs and profile, content
// (byte count and SHA-256). Observations may change between pages.
func (v *Verifier) checkIdentity(p *Page) error {
	want := Requested{Owner: v.target.Owner, Repo: v.target.Repo, Index: v.target.Index}
	if p.Requested != want {
		return v.fail(CheckRequested, fmt.Sprintf("%+v", want), fmt.Sprintf("%+v", p.Requested))
	}
	if err := checkManifest(p.Manifest); err != nil {
		return v.refuse(BoundStrict, "%v", err)
	}
	m, tree, id, err := parseManifest(p.Manifest)
	if err != nil {
		return v.fail(CheckManifest, "a manifest object", err.Error())
	}
	if v.manifest == nil {
		got := fmt.Sprintf("%s/%s#%d", m.Repository.Owner, m.Repository.Name, m.PullRequest.Index)
		if !strings.EqualFold(m.Repository.Owner, v.target.Owner) || !strings.EqualFold(m.Repository.Name, v.target.Repo) ||
			m.PullRequest.Index != v.target.Index {
			return v.fail(CheckManifest, "the diff of "+v.target.String(), "the diff of "+got)
		}
		if m.Content.ByteCount < 0 || len(m.Content.SHA256) != 64 || strings.ToLower(m.Content.SHA256) != m.Content.SHA256 {
			return v.fail(CheckManifest, "content with a byte_count ≥ 0 and a 64-hex-digit sha256",
				fmt.Sprintf("byte_count %d, sha256 %q", m.Content.ByteCount, m.Content.SHA256))
		}
		if _, err := hex.DecodeString(m.Content.SHA256); err != nil {
			return v.fail(CheckManifest, "a 64-hex-digit content.sha256", strconv.Quote(m.Content.SHA256))
		}
		if v.MaxBytes > 0 && m.Content.ByteCount > v.MaxBytes {
			return v.refuse(BoundMaxBytes, "the diff has %d bytes (manifest.content.byte_count), over the limit of %d",
				m.Content.ByteCount, v.MaxBytes)
		}
		v.identity, v.idTree = id, tree
	} else if id != v.identity {
		path, was, now := firstDifference(v.idTree, tree, "manifest")
		return v.fail(CheckManifest, fmt.Sprintf("%s %s as on page 1", path, clip(was)), clip(now))
	}
	v.manifest = m
	return nil
}

// clip shortens a value quoted in an error to at most 100 bytes.
func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:97] + "..."
}

// checkProgress: the page starts at the byte the reader asked for, where
// the previous page ended, and a page before the last one carries bytes
// and ends past its start, so that a read always moves towards eof. It
// reads what the page states, before its data is decoded.
func (v *Verifier) checkProgress(p *Page) error {
	if p.ByteOffset != v.offset {
		return v.refuse(BoundProgress, "byte_offset %d, where the previous page ended at %d", p.ByteOffset, v.offset)
	}
	if !p.EOF && (p.ChunkBytes < 1 || p.NextByteOffset <= p.ByteOffset) {
		return v.refuse(BoundProgress, "a page before eof with chunk_bytes %d and next_byte_offset %d from byte_offset %d",
			p.ChunkBytes, p.NextByteOffset, p.ByteOffset)
	}
	return nil
}

// checkText: text is the chunk when the chunk is UTF-8, and null when not.
func (v *Verifier) checkText(p *Page, chunk []byte) error {
	valid := utf8.Valid(chunk)
	switch {
	case p.Text == nil && valid:
		return v.fail(CheckText, fmt.Sprintf("the chunk's %d bytes as text (they are UTF-8)", len(chunk)), "null")
	case p.Text != nil && !valid:
		return v.fail(CheckText, "null (the chunk is not UTF-8)", fmt.Sprintf("a %d-byte string", len(*p.Text)))
	case p.Text != nil && *p.Text != string(chunk):
		i := 0
		for i < len(chunk) && i < len(*p.Text) && chunk[i] == (*p.Text)[i] {
			i++
		}
		return v.fail(CheckText, fmt.Sprintf("the chunk's %d bytes", len(chunk)),
			fmt.Sprintf("a %d-byte string that differs from them at byte %d", len(*p.Text), i))
	}
	return nil
}

// checkEnd checks where the page says it ends: next_byte_offset, within
// the diff, eof exactly at its end, a cursor exactly when not at eof.
func (v *Verifier) checkEnd(p *Page) error {
	next, count := p.ByteOffset+p.ChunkBytes, v.manifest.Content.ByteCount
	if p.NextByteOffset != next {
		return v.fail(CheckNextByteOffset, strconv.FormatInt(next, 10), strconv.FormatInt(p.NextByteOffset, 10))
	}
	if next > count {
		return v.fail(CheckByteCount, fmt.Sprintf("at most %d bytes (manifest.content.byte_count)", count),
			fmt.Sprintf("a page ending at byte %d", next))
	}
	if p.EOF != (next == count) {
		return v.fail(CheckEOF, strconv.FormatBool(next == count), strconv.FormatBool(p.EOF))
	}
	switch {
	case p.EOF && p.NextCursor != nil:
		return v.fail(CheckNextCursor, "null at eof", "a cursor")
	case !p.EOF && (p.NextCursor == nil || *p.NextCursor == ""):
		return v.fail(CheckNextCursor, "a cursor before eof", "none")
	}
	return nil
}

// Result is a verified diff: its manifest (the last page's, whose
// observations are the freshest), how many pages carried it, its length
// and its SHA-256.
type Result struct {
	Manifest *Manifest
	Pages    int
	Bytes    int64
	SHA256   string
}

// Finish makes the whole-diff checks once the last page passed: the
// assembled length and SHA-256 against manifest.content. Only then is the
// diff verified.
func (v *Verifier) Finish() (*Result, error) {
	if !v.done {
		return nil, v.fail(CheckEOF, "a last page with eof true", "no more pages")
	}
	fail := func(c Check, expected, got string) error {
		return &VerificationError{Page: v.pages, Offset: v.offset, Check: c, Expected: expected, Got: got}
	}
	c := v.manifest.Content
	if v.offset != c.ByteCount {
		return nil, fail(CheckByteCount, strconv.FormatInt(c.ByteCount, 10), strconv.FormatInt(v.offset, 10)+" bytes assembled")
	}
	sum := hex.EncodeToString(v.sum.Sum(nil))
	if sum != c.SHA256 {
		return nil, fail(CheckSHA256, c.SHA256+" (manifest.content.sha256)", sum+" (of the assembled diff)")
	}
	return &Result{Manifest: v.manifest, Pages: v.pages, Bytes: v.offset, SHA256: sum}, nil
}
