package documents

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// MaxFragmentBytes is the largest fragment git_document_get returns
// (64 KiB, docs/architecture.md#documents-contract).
const MaxFragmentBytes = 65536

// Fragment is the result of git_document_get, exactly the members
// docs/tools.md lists for it. NextCursor is absent at the end of the file.
type Fragment struct {
	Content        string `json:"content"`
	StartByte      int64  `json:"start_byte"`
	EndByte        int64  `json:"end_byte"`
	FileBytes      int64  `json:"file_bytes"`
	FileSHA256     string `json:"file_sha256"`
	FragmentSHA256 string `json:"fragment_sha256"`
	CommitSHA      string `json:"commit_sha"`
	Path           string `json:"path"`
	NextCursor     string `json:"next_cursor,omitempty"`
}

// fragmentEnd returns the end of the fragment of content that starts at
// start and holds at most limit bytes, moved back to a code-point boundary.
// content must be valid UTF-8 and 0 ≤ start ≤ len(content). A start inside a
// code point, or a limit smaller than the code point at start, is
// range_not_utf8_boundary.
func fragmentEnd(content []byte, start int64, limit int) (int64, error) {
	n := int64(len(content))
	if start < n && !utf8.RuneStart(content[start]) {
		return 0, toolerr.New(toolerr.RangeNotUTF8Boundary, "byte %d is inside a UTF-8 character; start at a character boundary", start).With("start_byte", start)
	}
	end := min(start+int64(limit), n)
	for end < n && end > start && !utf8.RuneStart(content[end]) {
		end--
	}
	if end == start && start < n {
		_, size := utf8.DecodeRune(content[start:])
		return 0, toolerr.New(toolerr.RangeNotUTF8Boundary, "the character at byte %d takes %d bytes, more than max_bytes allows", start, size).With("start_byte", start)
	}
	return end, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fileAndFragmentSHA256 are the hex SHA-256 of content and of
// content[start:end]. A fragment from the start of the file, the first
// read of every document, is a prefix of it: its hash is the file's hash
// state at the fragment's end, so the fragment's bytes are hashed once,
// not twice.
func fileAndFragmentSHA256(content []byte, start, end int64) (file, fragment string) {
	if start != 0 {
		return sha256Hex(content), sha256Hex(content[start:end])
	}
	h := sha256.New()
	h.Write(content[:end])
	var sum [sha256.Size]byte
	fragment = hex.EncodeToString(h.Sum(sum[:0]))
	h.Write(content[end:])
	return hex.EncodeToString(h.Sum(sum[:0])), fragment
}
