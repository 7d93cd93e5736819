package forgejoemu

import (
	"bytes"
	"fmt"
	"testing"
)

// TestRecordIsBounded: the request record keeps the newest requests, in
// order, at most maxRecordedRequests of them and maxRecordedBodyBytes of
// bodies, and always the request just recorded.
func TestRecordIsBounded(t *testing.T) {
	check := func(t *testing.T, st *state, last string) {
		t.Helper()
		total := 0
		for _, r := range st.requests {
			total += len(r.Body)
		}
		if len(st.requests) > maxRecordedRequests || total > maxRecordedBodyBytes || total != st.recordedBodyBytes {
			t.Fatalf("%d requests, %d body bytes (counted %d)", len(st.requests), total, st.recordedBodyBytes)
		}
		if got := st.requests[len(st.requests)-1].Path; got != last {
			t.Fatalf("the newest request is %s, want %s", got, last)
		}
	}
	t.Run("count", func(t *testing.T) {
		var st state
		n := 3*maxRecordedRequests + 7
		for i := range n {
			st.keepRequest(Recorded{Path: fmt.Sprint(i), Body: []byte("x")})
		}
		check(t, &st, fmt.Sprint(n-1))
		if len(st.requests) < maxRecordedRequests*8/10 {
			t.Fatalf("only %d requests kept", len(st.requests))
		}
		for i := 1; i < len(st.requests); i++ {
			if atoi(t, st.requests[i].Path) != atoi(t, st.requests[i-1].Path)+1 {
				t.Fatalf("not the newest in order: %s after %s", st.requests[i].Path, st.requests[i-1].Path)
			}
		}
	})
	t.Run("body bytes", func(t *testing.T) {
		var st state
		big := bytes.Repeat([]byte("b"), maxRecordedBody)
		for i := range 3 * maxRecordedBodyBytes / maxRecordedBody {
			st.keepRequest(Recorded{Path: fmt.Sprint(i), Body: big})
			check(t, &st, fmt.Sprint(i))
		}
		if st.recordedBodyBytes < maxRecordedBodyBytes/2 {
			t.Fatalf("only %d body bytes kept", st.recordedBodyBytes)
		}
	})
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
