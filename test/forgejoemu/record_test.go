package forgejoemu

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestRecordIsBounded: the emulator's request record is an emurecord.Ring
// whose costs are the requests' heads and kept bodies, so whichever bound
// large headers, large bodies or many requests reach, the record stays
// within every bound, keeps the newest request and counts every one.
func TestRecordIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		header int // bytes of one X-Pad header
		body   int
	}{
		{"count", emurecord.MaxRequests + emurecord.MaxRequests/5, 0, 1},
		{"head bytes", 2 * emurecord.MaxHeadBytes / (8 << 10), 8 << 10, 0},
		{"body bytes", 2 * emurecord.MaxBodyBytes / maxRecordedBody, 0, maxRecordedBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Emulator{}
			h := e.recordRequests(http.NotFoundHandler())
			pad, body := strings.Repeat("h", tc.header), bytes.Repeat([]byte("b"), tc.body)
			for i := range tc.n {
				r := httptest.NewRequest("POST", fmt.Sprintf("/api/v1/x?i=%d", i), bytes.NewReader(body))
				r.Header.Set("X-Pad", pad)
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			s := e.RecordStats()
			if s.Kept > emurecord.MaxRequests || s.KeptHeadBytes > emurecord.MaxHeadBytes || s.KeptBodyBytes > emurecord.MaxBodyBytes {
				t.Fatalf("over a bound: %+v", s)
			}
			if s.Seen != tc.n || s.Kept >= tc.n || s.Newest != fmt.Sprintf("POST /api/v1/x?i=%d", tc.n-1) {
				t.Fatalf("after %d requests: %+v", tc.n, s)
			}
			head, kept := 0, e.Requests()
			for _, r := range kept {
				head += recordCost(r).Head
				if len(r.Header.Get("X-Pad")) != tc.header || len(r.Body) != tc.body {
					t.Fatalf("a kept request lost its header or body")
				}
			}
			if len(kept) != s.Kept || head != s.KeptHeadBytes || s.KeptHeadBytes < s.Kept*tc.header || s.KeptBodyBytes != s.Kept*tc.body {
				t.Fatalf("the record's sums are off: %+v, %d requests of %d head bytes", s, len(kept), head)
			}
		})
	}
}

// TestRecordRoute: GET emurecord.Path answers what the record holds as
// JSON, from the emulator's own port, without recording itself; any other
// method there is Forgejo's 404, and recorded.
func TestRecordRoute(t *testing.T) {
	e := startEmu(t)
	do := func(method, target string, body string, header http.Header) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, e.URL()+target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(req.Header, header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	stats := func() emurecord.Stats {
		t.Helper()
		return gatewaytest.RecordStats(t, e.URL(), e.RecordStats)
	}
	if s := stats(); s != (emurecord.Stats{}) {
		t.Fatalf("a new emulator: %+v", s)
	}
	do("POST", "/api/v1/repos/o/r/agent-work-grants/1/confirm", "{}", nil)
	do("GET", "/api/v1/repos/search?q=gw", "", http.Header{"X-Pad": {strings.Repeat("h", 4096)}})
	s := stats()
	if s.Kept != 2 || s.Seen != 2 || s.KeptBodyBytes != 2 || s.KeptHeadBytes < 4096 || s.Newest != "GET /api/v1/repos/search?q=gw" {
		t.Fatalf("after two requests: %+v", s)
	}
	if again := stats(); again != s {
		t.Fatalf("asking changed the record: %+v, then %+v", s, again)
	}
	if resp := do("POST", emurecord.Path, "", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST %s: %d", emurecord.Path, resp.StatusCode)
	}
	if s := stats(); s.Seen != 3 || s.Newest != "POST "+emurecord.Path {
		t.Fatalf("the POST was not recorded: %+v", s)
	}
	e.ResetRequests()
	if s := stats(); s != (emurecord.Stats{}) {
		t.Fatalf("after ResetRequests: %+v", s)
	}
}
