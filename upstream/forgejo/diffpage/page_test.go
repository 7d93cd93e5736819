package diffpage

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPageMembersInDocumentedOrder pins the wire: the members the writer
// sends and the reader requires, by name and in the order docs/tools.md
// lists them, with text and next_cursor null on a page that has neither.
func TestPageMembersInDocumentedOrder(t *testing.T) {
	tests := []struct {
		name string
		page Page
		want string
	}{
		{"last page without text", Page{Manifest: json.RawMessage(`{}`), EOF: true},
			`{"requested":{"owner":"","repo":"","index":0},"manifest":{},"contract":"","atomic_latest_pr_snapshot":false,` +
				`"byte_offset":0,"chunk_bytes":0,"encoding":"","data":"","chunk_sha256":"","text":null,` +
				`"whole_diff_verified":false,"eof":true,"next_byte_offset":0,"next_cursor":null}`},
		{"chunk bytes beyond 32 bits", Page{Manifest: json.RawMessage(`{}`), ChunkBytes: 1 << 33},
			`"chunk_bytes":8589934592,`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.page)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Fatalf("page = %s\nwant it to hold %s", b, tt.want)
			}
		})
	}
}
