package upstream

import (
	"io"
	"testing"
)

// readFromRecorder is a writer that notes whether io.Copy handed it the
// source through ReadFrom (as a connection's ReadFrom would, with a
// fresh 32 KiB buffer).
type readFromRecorder struct{ readFrom bool }

func (r *readFromRecorder) Write(p []byte) (int, error) { return len(p), nil }

func (r *readFromRecorder) ReadFrom(src io.Reader) (int64, error) {
	r.readFrom = true
	return io.Copy(io.Discard, src)
}

// TestEmptyBodyCopiesWithoutBuffer: net/http copies sendOnce's empty body
// with io.Copy into the connection; the body writes itself (nothing), so
// no copy buffer is allocated per request.
func TestEmptyBodyCopiesWithoutBuffer(t *testing.T) {
	var w readFromRecorder
	n, err := io.Copy(&w, emptyBody{})
	if n != 0 || err != nil || w.readFrom {
		t.Fatalf("copied %d, %v; through ReadFrom: %v", n, err, w.readFrom)
	}
}
