package emurecord

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestTimed: served is told each request once, after the handler returned,
// with at least the time the handler took; nil served leaves the handler
// as it is.
func TestTimed(t *testing.T) {
	var got []string
	var took time.Duration
	returned := false
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		returned = true
		w.WriteHeader(http.StatusTeapot)
	})
	timed := Timed(h, func(r *http.Request, d time.Duration) {
		if !returned {
			t.Error("served was told before the handler returned")
		}
		got, took = append(got, r.Method+" "+r.URL.Path), d
	})
	rec := httptest.NewRecorder()
	timed.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/x", nil))
	if rec.Code != http.StatusTeapot || len(got) != 1 || got[0] != "GET /api/v1/x" || took < 20*time.Millisecond {
		t.Fatalf("status %d, served %q in %v", rec.Code, got, took)
	}
	rec = httptest.NewRecorder()
	Timed(h, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusTeapot {
		t.Fatalf("untimed: status %d", rec.Code)
	}
}
