package emurecord

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestRingIsBounded: whichever bound a stream of requests reaches, the
// ring keeps the newest requests, in order, within every bound, counts
// what it holds exactly, drops at most a tenth of what fits beyond what
// the bound needs, and sees every one.
func TestRingIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		cost Cost
		// fit is how many requests of cost fit in the bounds.
		fit int
	}{
		{"count", 3*MaxRequests + 7, Cost{Head: 100, Body: 1}, MaxRequests},
		{"head bytes", 3 * MaxHeadBytes / (8 << 10), Cost{Head: 8 << 10}, MaxHeadBytes / (8 << 10)},
		{"body bytes", 3 * MaxBodyBytes / (2 << 20), Cost{Head: 100, Body: 2 << 20}, MaxBodyBytes / (2 << 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Ring[int]
			for i := range tc.n {
				r.Add(i, tc.cost)
				s := r.Stats(strconv.Itoa)
				if s.Kept > MaxRequests || s.KeptHeadBytes > MaxHeadBytes || s.KeptBodyBytes > MaxBodyBytes {
					t.Fatalf("after %d requests: %+v", i+1, s)
				}
				if s.KeptHeadBytes != s.Kept*tc.cost.Head || s.KeptBodyBytes != s.Kept*tc.cost.Body {
					t.Fatalf("after %d requests the sums are off: %+v", i+1, s)
				}
				if s.Newest != strconv.Itoa(i) || s.Seen != i+1 {
					t.Fatalf("after %d requests: %+v", i+1, s)
				}
			}
			got := r.All()
			if len(got) < tc.fit-tc.fit/10-1 {
				t.Fatalf("only %d requests kept, %d fit", len(got), tc.fit)
			}
			for i, v := range got {
				if want := tc.n - len(got) + i; v != want {
					t.Fatalf("request %d is %d, want %d", i, v, want)
				}
			}
		})
	}
}

// TestRingKeepsTheNewest: a request over a bound on its own is kept, alone,
// until the next one; Reset forgets kept and seen.
func TestRingKeepsTheNewest(t *testing.T) {
	var r Ring[string]
	r.Add("a", Cost{Head: 10})
	r.Add("huge", Cost{Head: 10, Body: MaxBodyBytes + 1})
	if got := r.All(); len(got) != 1 || got[0] != "huge" {
		t.Fatalf("kept %q", got)
	}
	r.Add("b", Cost{Head: 10})
	if got := r.All(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("kept %q", got)
	}
	r.Reset()
	if s := r.Stats(func(s string) string { return s }); s != (Stats{}) {
		t.Fatalf("after Reset: %+v", s)
	}
}

// TestHeadBytes: every string, name and value counts its bytes and
// stringCost, so many tiny headers cost what they hold in memory.
func TestHeadBytes(t *testing.T) {
	h := http.Header{"A": {"1", "22"}, "Bb": {""}}
	q := map[string][]string{"q": {"x"}}
	// GET, /; A, 1, 22; Bb, ""; q, x: 9 strings of 12 bytes.
	want := 12 + 9*stringCost
	if got := HeadBytes([]string{"GET", "/"}, h, q); got != want {
		t.Fatalf("HeadBytes = %d, want %d", got, want)
	}
}

// TestServe: GET Path answers the stats as JSON; any other method or path
// goes to the emulator's own handler.
func TestServe(t *testing.T) {
	want := Stats{Kept: 2, KeptHeadBytes: 300, KeptBodyBytes: 4, Seen: 9, Newest: "GET /x?y=1"}
	h := Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}), func() Stats { return want })
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{"GET", Path, http.StatusOK},
		{"GET", Path + "?x=1", http.StatusOK},
		{"POST", Path, http.StatusTeapot},
		{"GET", Path + "/", http.StatusTeapot},
		{"GET", "/api/v1" + Path, http.StatusTeapot},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.target, nil))
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			if tc.status != http.StatusOK {
				return
			}
			var got Stats
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got != want {
				t.Fatalf("answer %s (%v), want %+v", w.Body, err, want)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}
