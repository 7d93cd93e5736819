package github

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// answering serves each Contents request the answer of the file named by
// its path in files, with a truthful Content-Length.
func answering(t *testing.T, files map[string][]byte) *Client {
	t.Helper()
	answers := map[string][]byte{}
	for path, content := range files {
		answers["/repos/o/r/contents/"+path] = contentsAnswer(t, path, content)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	origin, err := upstream.ParseOrigin(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(upstream.New(upstream.Config{Name: "github", Origin: origin, IOTimeout: 5 * time.Second}), nil)
}

func fileRequest(path string) FileRequest {
	return FileRequest{Owner: "o", Repo: "r", Path: path, Commit: "0123456789abcdef0123456789abcdef01234567"}
}

// TestBuffersReused: reads of files of every size, one after another and
// each released, answer each file's own bytes, never a byte of a read
// before (a small file read into the buffer a large one left holds only
// itself), and a released File keeps nothing.
func TestBuffersReused(t *testing.T) {
	files := map[string][]byte{
		"big.md":   githubemu.MultiByteDocument(200 << 10),
		"small.md": []byte("# small\n"),
		"empty.md": {},
		"mid.md":   bytes.Repeat([]byte("0123456789abcdef"), 4<<10),
		"large.md": githubemu.MultiByteDocument(900 << 10), // over maxPooledBuffer: not kept
	}
	c := answering(t, files)
	ctx := context.Background()
	for _, path := range []string{"big.md", "small.md", "big.md", "empty.md", "large.md", "mid.md", "small.md", "big.md"} {
		f, _, err := c.getFile(ctx, fileRequest(path), "token")
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Equal(f.Content, files[path]) || f.BlobSHA != BlobSHA(files[path]) {
			t.Fatalf("%s: %d bytes read, not the file's %d", path, len(f.Content), len(files[path]))
		}
		f.Release()
		if f.Content != nil || f.buf != nil {
			t.Fatalf("%s: a released file still holds its content", path)
		}
		f.Release() // twice is harmless
	}
}

// TestBuffersSpareTheCollector: once warm, a 200 KiB document's read
// leaves neither its answer nor its decoded file to the collector; each
// was a new allocation of about 280 and 200 KB before.
func TestBuffersSpareTheCollector(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what it is given")
	}
	content := githubemu.MultiByteDocument(200 << 10)
	c := answering(t, map[string][]byte{"doc.md": content})
	ctx := context.Background()
	read := func() {
		f, _, err := c.getFile(ctx, fileRequest("doc.md"), "token")
		if err != nil || len(f.Content) != len(content) {
			t.Fatal(err)
		}
		f.Release()
	}
	read()
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection empties the pool
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const reads = 20
	for range reads {
		read()
	}
	runtime.ReadMemStats(&after)
	// What is left is the request, the test server's side and the small
	// rest of the answer: a few tens of KB with the server in process.
	if per := (after.TotalAlloc - before.TotalAlloc) / reads; per > 100<<10 {
		t.Fatalf("%d bytes allocated a read, want the buffers reused", per)
	}
}
