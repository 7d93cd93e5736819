package documents

import (
	"testing"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// TestFileAndFragmentSHA256: the hashes taken together, the fragment's
// from the file's hash state when it starts the file, are each the
// SHA-256 of its own bytes, for every kind of range.
func TestFileAndFragmentSHA256(t *testing.T) {
	doc := githubemu.MultiByteDocument(3000)
	n := int64(len(doc))
	for _, r := range [][2]int64{{0, 0}, {0, 1}, {0, 63}, {0, 64}, {0, 65}, {0, n / 2}, {0, n}, {1, n}, {n / 3, n / 2}, {n, n}, {n - 1, n}} {
		file, frag := fileAndFragmentSHA256(doc, r[0], r[1])
		if file != sha256Hex(doc) || frag != sha256Hex(doc[r[0]:r[1]]) {
			t.Fatalf("range %v: %s %s", r, file, frag)
		}
	}
	if file, frag := fileAndFragmentSHA256(nil, 0, 0); file != sha256Hex(nil) || frag != file {
		t.Fatalf("empty file: %s %s", file, frag)
	}
}
