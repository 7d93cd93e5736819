package githubemu

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestRecordIsBounded: Requests keeps the newest requests, in order,
// within emurecord's bounds on their count and on their heads (large
// headers reach the bytes first); the counters still count every one.
func TestRecordIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		header int // bytes of one X-Pad header
	}{
		{"count", 2*emurecord.MaxRequests + 3, 0},
		{"head bytes", 2 * emurecord.MaxHeadBytes / (8 << 10), 8 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Emulator{}
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("X-Pad", strings.Repeat("h", tc.header))
			for i := range tc.n {
				r.URL.Path = fmt.Sprintf("/repos/o/r/contents/f%d", i)
				e.record(r, RouteContents)
			}
			got, s := e.Requests(), e.RecordStats()
			if s.Kept > emurecord.MaxRequests || s.KeptHeadBytes > emurecord.MaxHeadBytes || s.Kept != len(got) || s.Seen != tc.n {
				t.Fatalf("after %d requests: %+v", tc.n, s)
			}
			first := tc.n - len(got)
			for i, r := range got {
				if want := fmt.Sprintf("/repos/o/r/contents/f%d", first+i); r.Path != want || len(r.Header.Get("X-Pad")) != tc.header {
					t.Fatalf("request %d is %s, want %s", i, r.Path, want)
				}
			}
			if first == 0 || s.Newest != fmt.Sprintf("GET /repos/o/r/contents/f%d", tc.n-1) {
				t.Fatalf("not the newest: %+v", s)
			}
			if c := e.ContentsRequests(); c != tc.n {
				t.Fatalf("ContentsRequests = %d, want %d", c, tc.n)
			}
		})
	}
}

// TestRecordRoute: GET emurecord.Path on the emulator's port answers what
// the record holds, without recording itself or going through a fault;
// ResetCounters empties it.
func TestRecordRoute(t *testing.T) {
	e, err := Start(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.SetFault(RouteOther, Fault{Kind: FaultStatus, Status: http.StatusTeapot})
	stats := func() emurecord.Stats {
		t.Helper()
		return gatewaytest.RecordStats(t, e.URL(), e.RecordStats)
	}
	if s := stats(); s != (emurecord.Stats{}) {
		t.Fatalf("a new emulator: %+v", s)
	}
	do(t, "GET", e.URL()+"/repos/o/r/contents/a%20b?ref=main", "token x", "")
	s := stats()
	if s.Kept != 1 || s.Seen != 1 || s.KeptHeadBytes == 0 || s.Newest != "GET /repos/o/r/contents/a%20b?ref=main" {
		t.Fatalf("after one request: %+v", s)
	}
	if again := stats(); again != s {
		t.Fatalf("asking changed the record: %+v, then %+v", s, again)
	}
	e.ResetCounters()
	if s := stats(); s != (emurecord.Stats{}) {
		t.Fatalf("after ResetCounters: %+v", s)
	}
}
