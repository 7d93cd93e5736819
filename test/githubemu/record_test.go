package githubemu

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// TestRecordIsBounded: Requests keeps the newest requests, in order, at
// most maxRecordedRequests; the counters still count every one.
func TestRecordIsBounded(t *testing.T) {
	e := &Emulator{}
	n := 2*maxRecordedRequests + 3
	for i := range n {
		e.record(httptest.NewRequest("GET", fmt.Sprintf("/repos/o/r/contents/f%d", i), nil), RouteContents)
	}
	got := e.Requests()
	if len(got) > maxRecordedRequests || len(got) < maxRecordedRequests*8/10 {
		t.Fatalf("%d requests kept", len(got))
	}
	first := n - len(got)
	for i, r := range got {
		if want := fmt.Sprintf("/repos/o/r/contents/f%d", first+i); r.Path != want {
			t.Fatalf("request %d is %s, want %s", i, r.Path, want)
		}
	}
	if c := e.ContentsRequests(); c != n {
		t.Fatalf("ContentsRequests = %d, want %d", c, n)
	}
}
