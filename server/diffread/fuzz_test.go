package diffread_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
)

// FuzzPage feeds arbitrary page texts to DecodePage and a fresh Verifier:
// nothing panics; a page that decodes reads the same under a plain map
// decoding (exact names, the last of a repeated member: what jq or Python
// do) as the reader read it; and a page that passes wrote exactly its
// chunk — chunk_bytes bytes hashing to chunk_sha256, equal to its text when
// it has one.
//
//	go test ./server/diffread/ -run '^$' -fuzz FuzzPage -fuzztime 30s
func FuzzPage(f *testing.F) {
	o := serverOptions(testDiff())
	for _, off := range []int64{0, 100, 200} {
		b, _ := json.Marshal(diffreadtest.NewServedPage(o, off))
		f.Add(b)
	}
	empty, _ := json.Marshal(diffreadtest.NewServedPage(serverOptions(nil), 0))
	f.Add(empty)
	// Forgeries a lax reader would read otherwise than jq: a member in
	// another case beside its own, and repeated.
	f.Add([]byte(strings.Replace(string(empty), `"content":{`, `"content":{},"Content":{`, 1)))
	f.Add([]byte(strings.Replace(string(empty), `"eof":true`, `"eof":false,"eof":true`, 1)))
	f.Fuzz(func(t *testing.T, text []byte) {
		p, err := diffread.DecodePage(text)
		if err != nil {
			return
		}
		var plain map[string]any
		if err := json.Unmarshal(text, &plain); err != nil {
			t.Fatalf("a page decoded that a plain reading refuses: %v", err)
		}
		again, _ := json.Marshal(p)
		var fromPage map[string]any
		json.Unmarshal(again, &fromPage)
		if a, b := canonical(plain), canonical(fromPage); a != b {
			t.Fatalf("the reader read\n%s\na plain reading\n%s", b, a)
		}
		var w bytes.Buffer
		if err := diffread.NewVerifier(target, &w).Add(p); err != nil {
			return
		}
		sum := sha256.Sum256(w.Bytes())
		if int64(w.Len()) != p.ChunkBytes || hex.EncodeToString(sum[:]) != p.ChunkSHA256 ||
			(p.Text != nil) != utf8.Valid(w.Bytes()) || p.Text != nil && *p.Text != w.String() {
			t.Fatalf("a page passed that wrote %d bytes: %+v", w.Len(), p)
		}
	})
}

// canonical renders a JSON value with sorted members.
func canonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
