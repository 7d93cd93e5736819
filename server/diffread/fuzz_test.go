package diffread_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
)

// FuzzPage feeds arbitrary page texts to DecodePage and a fresh Verifier:
// nothing panics, and a page that passes wrote exactly its chunk — chunk_bytes
// bytes hashing to chunk_sha256, equal to its text when it has one.
//
//	go test ./server/diffread/ -run '^$' -fuzz FuzzPage -fuzztime 30s
func FuzzPage(f *testing.F) {
	o := serverOptions(testDiff())
	for _, off := range []int64{0, 100, 200} {
		b, _ := json.Marshal(diffreadtest.NewPage(o, off))
		f.Add(b)
	}
	empty, _ := json.Marshal(diffreadtest.NewPage(serverOptions(nil), 0))
	f.Add(empty)
	f.Fuzz(func(t *testing.T, text []byte) {
		p, err := diffread.DecodePage(text)
		if err != nil {
			return
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
