package evidencetest_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"

	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

// Example shows how a server streams an entity with a true Content-Length:
// one pass over the diff for its length and hash, Len for the header, a
// second pass to write. diffSource stands for anything that can be read
// twice, such as running git diff twice.
func Example() {
	diffSource := func() io.Reader { return bytes.NewReader([]byte("diff --git a/f b/f\n")) }
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := et.Sample()
		var err error
		if e.ByteCount, e.SHA256, err = et.Digest(diffSource()); err != nil {
			http.Error(w, "diff failed", http.StatusInternalServerError)
			return
		}
		faults := []et.Option{} // e.g. et.CorruptByteAt(e.ByteCount - 1)
		n, err := et.Len(e, faults...)
		if err != nil {
			http.Error(w, "fault does not apply", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		et.Write(w, e, diffSource(), faults...)
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/repos/team/project/pulls/7.diff", nil))
	fmt.Println(rec.Header().Get("Content-Length") == strconv.Itoa(rec.Body.Len()))
	// Output: true
}
